/**
 * An agent's business hours (contract.md § Behaviour: `agent.hours {timezone, weekly,
 * holidays, outside, outsideMessage}`): whether a moment falls inside them, in the agent's
 * own time zone (IANA name; daylight saving handled by the platform's Intl data, no clock of
 * our own). Pure: the moment is always passed in.
 *
 * Weekly ranges are local `HH:MM` pairs per weekday; `24:00` ends a range at midnight, and a
 * range whose end is not after its start runs past midnight into the next day (`22:00`–
 * `02:00`). A holiday (a local `YYYY-MM-DD`) is closed all day, including the part of the
 * previous evening's overnight range that falls on it.
 */
import type { AgentOutput } from '../../schema/conversation.js';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export type OutsideHoursPolicy = 'answer' | 'handoff' | 'message';

export interface BusinessHours {
  timezone: string;
  weekly: Partial<Record<Weekday, [string, string][]>>;
  holidays?: string[];
  /** What the agent does outside the hours: answer anyway, hand to a human, or send `outsideMessage`. */
  outside: OutsideHoursPolicy;
  outsideMessage?: string | null;
}

export const DEFAULT_OUTSIDE_MESSAGE = 'We are closed right now; we will answer during our opening hours.';

const TIME = /^([01]\d|2[0-3]):[0-5]\d$|^24:00$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Minutes since local midnight of `HH:MM`. */
const minutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Whether `timezone` is an IANA time zone this platform knows. */
export function isTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** What is wrong with `hours`, field by field (empty when it is usable). */
export function hoursProblems(hours: BusinessHours): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  if (!isTimeZone(hours.timezone)) out.push({ field: 'hours.timezone', message: 'must be an IANA time zone, e.g. Europe/Berlin' });
  for (const [day, ranges] of Object.entries(hours.weekly ?? {})) {
    if (!(WEEKDAYS as readonly string[]).includes(day)) out.push({ field: `hours.weekly.${day}`, message: `is not a weekday (${WEEKDAYS.join(', ')})` });
    for (const [i, range] of (ranges ?? []).entries()) {
      if (!Array.isArray(range) || range.length !== 2 || !range.every((x) => typeof x === 'string' && TIME.test(x))) {
        out.push({ field: `hours.weekly.${day}.${i}`, message: 'must be ["HH:MM", "HH:MM"] (00:00–24:00)' });
      } else if (range[0] === range[1]) out.push({ field: `hours.weekly.${day}.${i}`, message: 'must not start and end at the same time' });
    }
  }
  for (const [i, d] of (hours.holidays ?? []).entries()) {
    if (!DATE.test(d) || Number.isNaN(Date.parse(`${d}T00:00:00Z`))) out.push({ field: `hours.holidays.${i}`, message: 'must be a date YYYY-MM-DD' });
  }
  return out;
}

interface LocalTime {
  date: string;
  weekday: Weekday;
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function localTime(at: Date, timezone: string): LocalTime {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' });
    formatters.set(timezone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    weekday: parts.weekday!.toLowerCase().slice(0, 3) as Weekday,
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

const previous = (day: Weekday): Weekday => WEEKDAYS[(WEEKDAYS.indexOf(day) + 6) % 7]!;

/** True when `at` falls inside the business hours. */
export function isOpen(hours: BusinessHours, at: Date): boolean {
  const now = localTime(at, hours.timezone);
  if (hours.holidays?.includes(now.date)) return false;
  const today = hours.weekly[now.weekday] ?? [];
  for (const [start, end] of today) {
    const s = minutes(start);
    const e = minutes(end);
    if (e > s ? now.minute >= s && now.minute < e : now.minute >= s) return true;
  }
  // Yesterday's overnight ranges reach into today until their end.
  for (const [start, end] of hours.weekly[previous(now.weekday)] ?? []) {
    const s = minutes(start);
    const e = minutes(end);
    if (e <= s && now.minute < e) return true;
  }
  return false;
}

/**
 * What the agent does with a customer message that arrives at `at` (the outside-hours
 * policy): null to answer it as usual (open, no hours, or `outside: "answer"`); outside the
 * hours with `handoff`, a handoff (`outside_hours`, told `outsideMessage` if set); with
 * `message`, a reply of `outsideMessage` (or the default), once per conversation: a customer
 * `alreadyTold` gets an empty reply (nothing sent, the conversation stays active).
 */
export function outsideHoursOutput(hours: BusinessHours | null, at: Date, alreadyTold: boolean): AgentOutput | null {
  if (!hours || hours.outside === 'answer' || isOpen(hours, at)) return null;
  if (hours.outside === 'handoff') return { kind: 'handoff', reason: 'outside_hours', ...(hours.outsideMessage ? { text: hours.outsideMessage } : {}) };
  return { kind: 'reply', text: alreadyTold ? '' : (hours.outsideMessage ?? DEFAULT_OUTSIDE_MESSAGE) };
}
