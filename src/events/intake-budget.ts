/**
 * The memory budget of capture requests: bytes held by the requests being read, decoded and parsed at once
 * (their bodies and decoded texts), so that SDKs sending large batches together cannot
 * take the process past its memory limit (the queue's bound counts only what was accepted). A request takes its
 * share before its body is read and gives it back once answered; one that finds the budget taken waits, in arrival
 * order, up to `waitMs`, and is then answered 503 with Retry-After (the SDKs retry a 503). A request larger than the
 * whole budget is let through alone, so every request upstream would take can be taken (its size is bounded by
 * upstream's 20 MB body and the 32 MiB decoded limit).
 */

/** One request's share of the budget. */
export interface IntakeLease {
  readonly bytes: number;
}

interface Waiter {
  readonly bytes: number;
  readonly grant: (lease: IntakeLease | null) => void;
  timer: NodeJS.Timeout | null;
}

/**
 * The default budget: an eighth of the container's memory limit (cgroup; 32 MiB under the chart's 256Mi, and
 * without a limit). A request holds its body and, when compressed, its decoded text, once each (its events are
 * views of it); the rest of the limit holds the idle process (~70 MiB), the events queue's bound (64 MiB by
 * default), the batches being forwarded, and the bodies V8 has not freed yet (it frees a dropped buffer only at a
 * collection, which external memory triggers only after tens of MiB). Measured, 16 SDKs sending a 19 MB batch at
 * once: an eighth peaks at 187 MiB RSS, a quarter at 292 (docs/reliability.md).
 */
export function defaultIntakeBudget(memoryLimit: number | undefined): number {
  const known = memoryLimit !== undefined && memoryLimit > 0 && memoryLimit < 2 ** 50;
  return known ? Math.max(8 * 1024 * 1024, Math.floor(memoryLimit / 8)) : 32 * 1024 * 1024;
}

/** A budget of `maxBytes`; a request waits at most `waitMs` for its share. */
export function createIntakeBudget(maxBytes: number, waitMs: number) {
  const leases = new Set<{ bytes: number }>();
  const waiters: Waiter[] = [];
  let used = 0;

  const fits = (bytes: number): boolean => used + bytes <= maxBytes || leases.size === 0;
  const take = (bytes: number): IntakeLease => {
    const lease = { bytes };
    leases.add(lease);
    used += bytes;
    return lease;
  };
  const wake = (): void => {
    while (waiters.length > 0 && fits((waiters[0] as Waiter).bytes)) {
      const waiter = waiters.shift() as Waiter;
      if (waiter.timer !== null) clearTimeout(waiter.timer);
      waiter.grant(take(waiter.bytes));
    }
  };

  return {
    /** A share of `bytes`, at once or after those waiting before it; null when it was not free within `waitMs`. */
    acquire(bytes: number): Promise<IntakeLease | null> {
      if (waiters.length === 0 && fits(bytes)) return Promise.resolve(take(bytes));
      return new Promise((grant) => {
        const waiter: Waiter = { bytes, grant, timer: null };
        waiter.timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          grant(null);
          wake();
        }, waitMs);
        waiters.push(waiter);
      });
    },
    /** Grow `lease` to `bytes` without waiting; false when that does not fit (and other requests hold shares). */
    grow(lease: IntakeLease, bytes: number): boolean {
      const held = lease as { bytes: number };
      if (bytes <= held.bytes) return true;
      if (used + bytes - held.bytes > maxBytes && leases.size > 1) return false;
      used += bytes - held.bytes;
      held.bytes = bytes;
      return true;
    },
    /** Give a share back. */
    release(lease: IntakeLease): void {
      if (!leases.delete(lease as { bytes: number })) return;
      used -= lease.bytes;
      wake();
    },
    /** Bytes held, requests waiting, and the bound (the /status block). */
    status: () => ({ bytes: used, waiting: waiters.length, max_bytes: maxBytes }),
  };
}

/** A capture memory budget. */
export type IntakeBudget = ReturnType<typeof createIntakeBudget>;
