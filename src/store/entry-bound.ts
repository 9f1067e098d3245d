/**
 * lru-cache options that bound a cache to `max` entries without allocating for `max` up front. Given `max`,
 * lru-cache allocates its key, value and link arrays for that many entries in its constructor (1.4 MB for 50,000;
 * about 1 MiB of an offline sidecar's idle RSS in all), memory held from start by caches that mostly stay nearly
 * empty. Counted as a size of 1 per entry, the same bound holds and the arrays grow with use. Not for a
 * cache already bounded by `maxSize` (bytes): it keeps `max`.
 */
export function entryBound(max: number): { readonly maxSize: number; readonly sizeCalculation: () => number } {
  return { maxSize: max, sizeCalculation: () => 1 };
}
