/**
 * Where the events relay forwards to when FLAG_SIDECAR_EVENTS_URL is not set: PostHog Cloud's ingestion host
 * for its regions (`https://us.i.posthog.com` for `https://us.posthog.com` and the legacy `app.posthog.com`,
 * `https://eu.i.posthog.com` for `https://eu.posthog.com`), otherwise the upstream URL itself (a self-hosted
 * PostHog takes captures on its own host). Null offline: the relay refuses events then. Pure.
 */

const cloudIngestion: Readonly<Record<string, string>> = {
  'us.posthog.com': 'https://us.i.posthog.com',
  'app.posthog.com': 'https://us.i.posthog.com',
  'eu.posthog.com': 'https://eu.i.posthog.com',
};

/** The events URL: the one given, else the default for the upstream URL, else null (offline). */
export function eventsUrlFor(given: URL | null, upstream: URL | null): URL | null {
  if (given !== null) return given;
  if (upstream === null) return null;
  const cloud = cloudIngestion[upstream.hostname.toLowerCase()];
  return cloud !== undefined && upstream.protocol === 'https:' ? new URL(cloud) : upstream;
}
