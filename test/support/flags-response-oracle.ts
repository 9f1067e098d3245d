/**
 * The /flags response builder as it was before the per-snapshot fragment tables (flag-fragments.ts): one
 * object per (flag, value, reason, condition) serialized with JSON.stringify. Kept as the oracle of
 * test/unit/flags-response-differential.test.ts: the sidecar's bodies must stay these bytes.
 */
import type { Decided } from '../../src/eval/flags-response.js';
import { payloadFor } from '../../src/eval/payload.js';
import type { RemotePart } from '../../src/eval/remote-part.js';
import type { ReasonCode } from '../../src/eval/evaluate.js';

const descriptions: Record<ReasonCode, string> = {
  condition_match: '',
  no_condition_match: 'No matching condition set',
  no_condition_match_groups_not_evaluated: 'No matching condition set (group conditions were not evaluated because no group type was provided)',
  out_of_rollout_bound: 'Out of rollout bound',
  no_group_type: 'No group type',
  holdout_condition_value: 'Holdout condition value',
  flag_disabled: 'Feature flag is disabled',
  // rust/feature-flags src/api/types.rs, FlagDetails::get_reason_description.
  super_condition_value: 'Super condition value',
};

const nullPayloadTail = '"payload":null}}';

export function oracleV2Fragment(d: Decided): string {
  const flag = d.flag;
  const description = d.reason === 'condition_match' ? `Matched condition set ${(d.conditionIndex ?? 0) + 1}` : descriptions[d.reason];
  const detail = {
    key: flag.key,
    enabled: d.value !== false,
    variant: typeof d.value === 'string' ? d.value : null,
    reason: { code: d.reason === 'no_condition_match_groups_not_evaluated' ? 'no_condition_match' : d.reason, condition_index: d.conditionIndex, description },
    metadata: { id: flag.id, version: flag.version, description: flag.name, has_experiment: flag.hasExperiment, payload: null as unknown },
  };
  // An enrolment's false carries the "true" payload too (flag_matching.rs get_match).
  const payload = d.reason === 'super_condition_value' ? flag.payloads.get('true') : payloadFor(flag, d.value);
  const json = JSON.stringify(detail);
  const body = payload === undefined ? json : `${json.slice(0, -nullPayloadTail.length)}"payload":${payload.json}}}`;
  return `${JSON.stringify(flag.key)}:${body}`;
}

const oracleLegacyValue = (d: Decided): string => `${JSON.stringify(d.flag.key)}:${JSON.stringify(d.value)}`;

function oracleLegacyPayload(d: Decided): string | null {
  const payload = d.reason === 'super_condition_value' ? d.flag.payloads.get('true') : payloadFor(d.flag, d.value);
  return payload === undefined ? null : `${JSON.stringify(d.flag.key)}:${payload.json}`;
}

interface Stamp {
  readonly requestId: string;
  readonly evaluatedAt: number;
  readonly minimalFlagCalledEvents?: boolean;
}

const tail = (errors: boolean, quotaLimited: readonly string[] | null, stamp: Stamp, minimal: boolean): string =>
  `,"errorsWhileComputingFlags":${errors}${quotaLimited ? `,"quotaLimited":${JSON.stringify(quotaLimited)}` : ''},"requestId":${JSON.stringify(stamp.requestId)},"evaluatedAt":${stamp.evaluatedAt}${minimal ? ',"minimalFlagCalledEvents":true' : ''}}`;

export function oracleV2Body(local: readonly Decided[], remote: RemotePart, stamp: Stamp): string {
  const parts = local.map(oracleV2Fragment);
  parts.push(...remote.details);
  return `{"flags":{${parts.join(',')}}${tail(remote.errors, remote.quotaLimited, stamp, stamp.minimalFlagCalledEvents === true)}`;
}

export function oracleLegacyBody(local: readonly Decided[], remote: RemotePart, stamp: Stamp): string {
  const values = local.map(oracleLegacyValue);
  values.push(...remote.values);
  const payloads: string[] = [];
  for (const d of local) {
    const fragment = oracleLegacyPayload(d);
    if (fragment !== null) payloads.push(fragment);
  }
  payloads.push(...remote.payloads);
  return `{"featureFlags":{${values.join(',')}},"featureFlagPayloads":{${payloads.join(',')}}${tail(remote.errors, remote.quotaLimited, stamp, false)}`;
}

export function oracleReasonsBody(local: readonly Decided[]): string {
  const parts = local.map(
    (d) =>
      `${JSON.stringify(d.flag.key)}:${JSON.stringify({
        value: d.value,
        evaluation: { reason: d.reason === 'flag_disabled' ? 'disabled' : d.reason === 'no_condition_match_groups_not_evaluated' ? 'no_condition_match' : d.reason, condition_index: d.conditionIndex },
      })}`,
  );
  return `{${parts.join(',')}}`;
}
