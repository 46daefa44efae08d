import { createServer } from 'node:http';
import express, { type RequestHandler } from 'express';
import t, { type Test } from 'tap';
import { errorHandler, notFoundHandler } from '../../gateway/http/errors.js';
import { PAGE_QUERY } from '../../gateway/http/pagination.js';
import { AppRoutes, defineRoute, type Guards, type Route } from '../../gateway/http/route.js';
import { bodyValidator, idParam, idPathParam, type BodyValidator } from '../../gateway/http/validate.js';
import { AppError } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import { listenLocal } from '../support/local-server.js';
import { apiClient } from '../support/service.js';

/**
 * A route is one declaration (gateway/http/route.ts): AppRoutes mounts it behind the guard of
 * its access, runs its stages in order (load, query, body, handler), and records its doc
 * under the prefix it is mounted at. A declaration that cannot be its doc fails at mount.
 */
const allow = (header: string): RequestHandler => (req, _res, next) => {
  if (req.headers.authorization !== header) throw new AppError('UNAUTHORIZED');
  next();
};
const guards: Guards = { any: allow('Bearer any'), session: allow('Bearer session'), metrics: allow('Bearer metrics') };
const nameBody = bodyValidator<{ name: string }>({ title: 'Named', type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string', minLength: 1 } } });
const otherBody = bodyValidator<{ other: number }>({ title: 'Other', type: 'object', required: ['other'], properties: { other: { type: 'integer' } } });
const EITHER_BODY: readonly BodyValidator<{ name: string } | { other: number }>[] = [nameBody, otherBody];
const THING_ID = idPathParam('thing');
const doc = { tag: 'Agents', responses: { 200: { description: 'Done.' } } } as const;

/** The app of these groups, listening; its requests as `[status, body]`. */
async function serve(t: Test, mount: (routes: AppRoutes) => void) {
  const app = express();
  app.use(express.json());
  const routes = new AppRoutes(app, guards);
  mount(routes);
  app.use(notFoundHandler);
  app.use(errorHandler(createLogger('silent')));
  const { url } = await listenLocal(createServer(app), t);
  const api = apiClient(url);
  const call = async (method: string, path: string, options: { token?: string; body?: unknown } = {}) => {
    const res = await api(method, path, options);
    return [res.status, res.body] as const;
  };
  return { routes, call };
}

t.test('the stages run in order: guard, load, query, body, handler', async (t) => {
  const seen: string[] = [];
  const things = new Set([1]);
  const update = defineRoute({
    ...doc, method: 'PATCH', path: '/:id', operationId: 'updateThing', access: 'any', summary: 'Change a thing',
    params: [THING_ID],
    query: { params: PAGE_QUERY.params, parse: (q) => (seen.push('query'), PAGE_QUERY.parse(q)) },
    body: { validators: [nameBody], example: { name: 'x' } },
    load: (req) => {
      seen.push('load');
      const id = idParam(req.params.id, 'Thing');
      if (!things.has(id)) throw new AppError('NOT_FOUND', 'Thing not found.');
      return id;
    },
    handler: ({ res, loaded, query, body }) => {
      seen.push('handler');
      res.json({ id: loaded, limit: query.limit, name: body.name });
    },
  });
  const { call } = await serve(t, (routes) => routes.mount('/api/things', [update]));

  t.same(await call('PATCH', '/api/things/1?limit=5', { token: 'any', body: { name: 'kettle' } }), [200, { id: 1, limit: 5, name: 'kettle' }]);
  t.same(seen.splice(0), ['load', 'query', 'handler'], 'the body is checked by the declared validator, between the query and the handler');
  t.equal((await call('PATCH', '/api/things/1', { body: { name: 'kettle' } }))[0], 401, 'the guard of its access comes first');
  t.same(seen.splice(0), [], 'nothing else ran');
  t.equal((await call('PATCH', '/api/things/2', { token: 'any', body: {} }))[0], 404, 'a missing resource answers before a bad body');
  const [status, answer] = await call('PATCH', '/api/things/1?limit=0', { token: 'any', body: {} });
  t.equal(status, 400);
  t.same(answer.error.details, [{ field: 'limit', message: 'must be an integer from 1 to 200' }], 'a bad query answers before a bad body');
  t.match((await call('PATCH', '/api/things/1', { token: 'any', body: { name: '' } }))[1].error, { code: 'VALIDATION_ERROR', details: [{ field: 'name' }] });
});

t.test('a group with an access guards every path under its prefix; routes of their own are guarded one by one', async (t) => {
  const list = (access: 'any' | 'session' | 'public', operationId: string): Route =>
    defineRoute({ ...doc, method: 'GET', path: '/', operationId, access, summary: 'List', handler: ({ res }) => void res.json({ operationId }) });
  const { call } = await serve(t, (routes) => {
    routes.mount('/api/mine', [list('session', 'listMine')], { access: 'session' });
    routes.mount('/api/open', [list('public', 'listOpen'), defineRoute({ ...doc, method: 'GET', path: '/guarded', operationId: 'guarded', access: 'any', summary: 'Guarded', handler: ({ res }) => void res.json({}) })]);
  });
  t.equal((await call('GET', '/api/mine/nothing-here'))[0], 401, 'an unknown path under a guarded prefix: 401 without the credential');
  t.equal((await call('GET', '/api/mine/nothing-here', { token: 'any' }))[0], 401, 'the group needs its own access');
  t.equal((await call('GET', '/api/mine/nothing-here', { token: 'session' }))[0], 404, '404 with it');
  t.same(await call('GET', '/api/mine', { token: 'session' }), [200, { operationId: 'listMine' }]);
  t.same(await call('GET', '/api/open'), [200, { operationId: 'listOpen' }]);
  t.equal((await call('GET', '/api/open/nothing-here'))[0], 404, 'an unguarded prefix: an unknown path is 404 for anyone');
  t.equal((await call('GET', '/api/open/guarded'))[0], 401, 'a route of its own access');
  t.equal((await call('GET', '/api/open/guarded', { token: 'any' }))[0], 200);
});

t.test('the doc of each route is recorded under its prefix, its query parameters after its own', async (t) => {
  const get = defineRoute({ ...doc, method: 'GET', path: '/:id/parts', operationId: 'listParts', access: 'any', summary: 'Parts', params: [THING_ID], query: PAGE_QUERY, handler: () => {} });
  const create = defineRoute({ ...doc, method: 'POST', path: '/', operationId: 'createThing', access: 'any', summary: 'Create', body: { validators: [nameBody], example: { name: 'x' } }, handler: () => {} });
  const { routes } = await serve(t, (routes) => {
    routes.mount('/api/things/', [get, create]);
    routes.servedAhead([{ ...doc, method: 'POST', path: '/api/hooks/:id', operationId: 'hook', access: 'public', summary: 'Hook', params: [THING_ID] }]);
  });
  const [parts, created, hook] = routes.docs();
  t.match(parts, { operationId: 'listParts', fullPath: '/api/things/:id/parts', servedBy: 'express', params: [THING_ID, ...PAGE_QUERY.params] });
  t.notOk('handler' in parts! || 'load' in parts! || 'query' in parts!, 'the doc holds no handler or parser');
  t.match(created, { fullPath: '/api/things', body: { validators: [nameBody], example: { name: 'x' } } });
  t.notOk(created!.params, 'no parameters, none documented');
  t.match(hook, { fullPath: '/api/hooks/:id', servedBy: 'server' });
});

t.test('a declaration that cannot be its doc is refused at mount', async (t) => {
  const app = express();
  const routes = new AppRoutes(app, guards);
  const base = { ...doc, operationId: 'x', summary: 'X', handler: () => {} };
  t.throws(() => routes.mount('/a', [defineRoute({ ...base, method: 'GET', path: '/:id', access: 'any' })]), /path parameters declared \[\] for \[id\]/);
  t.throws(() => routes.mount('/a', [defineRoute({ ...base, method: 'GET', path: '/', access: 'any', params: [THING_ID] })]), /path parameters declared \[id\] for \[\]/);
  t.throws(() => routes.mount('/a', [defineRoute({ ...base, method: 'POST', path: '/', access: 'any', body: { validators: EITHER_BODY, example: {} } })]), /several body validators and no choose/);
  t.throws(() => routes.mount('/a', [defineRoute({ ...base, method: 'GET', path: '/', access: 'public' })], { access: 'any' }), /is public under a prefix that needs any/);
});

t.test('a body is checked by the validator chosen for the request, which must be one the route documents', async (t) => {
  const post = (choose: (body: { skip?: boolean }) => typeof nameBody | null) =>
    defineRoute({
      ...doc, method: 'POST', path: '/', operationId: 'post', access: 'public', summary: 'Post',
      body: { validators: [nameBody], example: { name: 'x' }, choose: (req) => choose(req.body) },
      handler: ({ res, body }) => void res.json({ body: body ?? null }),
    });
  const { call } = await serve(t, (routes) => {
    routes.mount('/chosen', [post((b) => (b.skip ? null : nameBody))]);
    routes.mount('/undocumented', [post(() => otherBody as unknown as typeof nameBody)]);
  });
  t.same(await call('POST', '/chosen', { body: { name: 'a' } }), [200, { body: { name: 'a' } }]);
  t.same(await call('POST', '/chosen', { body: { skip: true } }), [200, { body: null }], 'null: the handler reads the body itself');
  t.equal((await call('POST', '/undocumented', { body: { other: 1 } }))[0], 500, 'a validator the doc does not show is a bug, not an answer');
});
