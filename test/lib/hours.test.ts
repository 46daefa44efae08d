import t from 'tap';
import { DEFAULT_OUTSIDE_MESSAGE, hoursProblems, isOpen, outsideHoursOutput, type BusinessHours } from '../../lib/agents/hours.js';

/**
 * Business hours in the agent's own time zone, with the moment passed in (an injected
 * clock): weekdays, ranges past midnight, holidays, daylight-saving changes.
 */
const berlin: BusinessHours = {
  timezone: 'Europe/Berlin',
  weekly: { mon: [['09:00', '12:30'], ['13:30', '18:00']], tue: [['09:00', '18:00']], fri: [['22:00', '02:00']], sat: [['10:00', '24:00']] },
  holidays: ['2026-12-25'],
  outside: 'handoff',
};
const at = (iso: string) => new Date(iso);

t.test('inside and outside the weekly ranges, in the agent\'s time zone', async (t) => {
  // Monday 2026-11-23; Berlin is UTC+1 in November.
  t.ok(isOpen(berlin, at('2026-11-23T08:00:00Z')), '09:00 local: open');
  t.notOk(isOpen(berlin, at('2026-11-23T07:59:00Z')), '08:59 local: not yet');
  t.notOk(isOpen(berlin, at('2026-11-23T11:45:00Z')), '12:45 local: lunch break');
  t.ok(isOpen(berlin, at('2026-11-23T12:30:00Z')), '13:30 local: open again');
  t.notOk(isOpen(berlin, at('2026-11-23T17:00:00Z')), '18:00 local: closed (end is exclusive)');
  t.notOk(isOpen(berlin, at('2026-11-25T10:00:00Z')), 'Wednesday: no ranges');
  t.ok(isOpen(berlin, at('2026-11-28T22:59:00Z')), 'Saturday 23:59 local, a range to 24:00');
});

t.test('a range past midnight, and a holiday', async (t) => {
  t.ok(isOpen(berlin, at('2026-11-27T21:30:00Z')), 'Friday 22:30 local');
  t.ok(isOpen(berlin, at('2026-11-28T00:30:00Z')), 'Saturday 01:30 local, still Friday\'s range');
  t.notOk(isOpen(berlin, at('2026-11-28T01:00:00Z')), 'Saturday 02:00 local: over');
  const xmas = { ...berlin, weekly: { ...berlin.weekly, fri: [['09:00', '18:00']] as [string, string][] } };
  t.notOk(isOpen(xmas, at('2026-12-25T10:00:00Z')), 'Friday 25 December is a holiday');
  t.ok(isOpen(xmas, at('2026-12-18T10:00:00Z')), 'the Friday before is not');
});

t.test('daylight saving time: the same local hour on both sides of the change', async (t) => {
  const ny: BusinessHours = { timezone: 'America/New_York', weekly: { mon: [['09:00', '17:00']] }, outside: 'message' };
  t.ok(isOpen(ny, at('2026-03-02T14:30:00Z')), 'EST (UTC−5): 09:30 local');
  t.ok(isOpen(ny, at('2026-03-09T13:30:00Z')), 'EDT (UTC−4): 09:30 local');
  t.notOk(isOpen(ny, at('2026-03-09T12:30:00Z')), 'EDT: 08:30 local, closed');
});

t.test('what is wrong with a configuration, field by field', async (t) => {
  t.same(hoursProblems(berlin), []);
  const bad = hoursProblems({ timezone: 'Mars/Olympus', weekly: { mon: [['9:00', '18:00']], xyz: [] } as never, holidays: ['25.12.2026'], outside: 'answer' });
  t.same(bad.map((p) => p.field).sort(), ['hours.holidays.0', 'hours.timezone', 'hours.weekly.mon.0', 'hours.weekly.xyz']);
  t.same(hoursProblems({ timezone: 'UTC', weekly: { mon: [['10:00', '10:00']] }, outside: 'answer' }).map((p) => p.field), ['hours.weekly.mon.0']);
});

t.test('the outside-hours policy decides what a message gets', async (t) => {
  const open = at('2026-11-23T08:00:00Z'); // Monday 09:00 Berlin
  const closed = at('2026-11-23T02:00:00Z'); // Monday 03:00 Berlin
  t.equal(outsideHoursOutput(null, closed, false), null, 'no hours: always answered');
  t.equal(outsideHoursOutput(berlin, open, false), null, 'open: answered as usual');
  t.equal(outsideHoursOutput({ ...berlin, outside: 'answer' }, closed, false), null, '"answer": answered anyway');
  t.same(outsideHoursOutput(berlin, closed, false), { kind: 'handoff', reason: 'outside_hours' }, '"handoff": to a human');
  t.same(outsideHoursOutput({ ...berlin, outsideMessage: 'Back at 9.' }, closed, false), { kind: 'handoff', reason: 'outside_hours', text: 'Back at 9.' }, 'told outsideMessage as it goes');
  const message = { ...berlin, outside: 'message' as const, outsideMessage: 'Closed now, back at 9.' };
  t.same(outsideHoursOutput(message, closed, false), { kind: 'reply', text: 'Closed now, back at 9.' }, '"message": the message');
  t.same(outsideHoursOutput(message, closed, true), { kind: 'reply', text: '' }, 'once: nothing more to a customer already told');
  t.same(outsideHoursOutput({ ...message, outsideMessage: null }, closed, false), { kind: 'reply', text: DEFAULT_OUTSIDE_MESSAGE }, 'the default message');
  t.equal(outsideHoursOutput(message, open, true), null, 'open again: answered');
});
