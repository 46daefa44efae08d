// Swagger UI over this service's own document. An external file, not an inline script, so
// the page's Content-Security-Policy can stay `script-src 'self'`. No validator badge:
// nothing is fetched from anywhere but this service.
const options = {
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  defaultModelsExpandDepth: 0,
};
// "Try it out" calls the origin this page was opened at first: the document's server is
// PUBLIC_BASE_URL, which may be another spelling of it (localhost / 127.0.0.1) or an address
// behind a proxy, and calling it from here would be a cross-origin request.
fetch('/api/openapi.json')
  .then((res) => (res.ok ? res.json() : Promise.reject(new Error(`HTTP ${res.status}`))))
  .then((spec) => {
    const others = (spec.servers ?? []).filter((s) => s.url !== location.origin);
    const servers = [{ url: location.origin, description: 'where this page was opened' }, ...others];
    window.ui = window.SwaggerUIBundle({ ...options, spec: { ...spec, servers } });
  })
  .catch(() => {
    window.ui = window.SwaggerUIBundle({ ...options, url: '/api/openapi.json' });
  });
