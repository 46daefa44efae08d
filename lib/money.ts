/**
 * Money is exact: PostgreSQL numeric does the arithmetic, strings carry the values.
 * Display keeps at least two decimals and drops only trailing zeros beyond them
 * ("5.000000" → "5.00", "-0.000450" → "-0.00045").
 */
export function formatUsd(value: string | number): string {
  const s = typeof value === 'number' ? value.toFixed(6) : value.trim();
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(s);
  if (!m) throw new Error(`not a decimal amount: ${s}`);
  const [, sign, whole, frac = ''] = m;
  const cut = frac.replace(/0+$/, '').padEnd(2, '0');
  const digits = `${BigInt(whole!)}.${cut}`;
  return /^0\.0+$/.test(digits) ? digits : `${sign}${digits}`;
}
