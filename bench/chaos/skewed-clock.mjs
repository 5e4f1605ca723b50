// Preloaded into an `offsetlake run` child (NODE_OPTIONS=--import=…) by the clock-skew
// scenario: the process's wall clock runs OFFSETLAKE_CHAOS_CLOCK_SKEW_MS ahead (negative:
// behind). Date.now() and `new Date()` are shifted; timers and performance.now() are not,
// as on a machine whose clock is set wrong.
const skew = Number(process.env.OFFSETLAKE_CHAOS_CLOCK_SKEW_MS ?? 0);
if (skew !== 0) {
  const RealDate = Date;
  const realNow = RealDate.now;
  class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + skew);
      else super(...args);
    }
    static now() {
      return realNow() + skew;
    }
  }
  globalThis.Date = SkewedDate;
}
