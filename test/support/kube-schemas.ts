/**
 * Validation of rendered objects against the Kubernetes OpenAPI schemas (kubernetes-models) and the Prometheus
 * Operator CRD schemas (@kubernetes-models/prometheus-operator): required fields, types, enums and formats. Like
 * the API server's schema check, not its strict field check: a field the schema does not know is not reported.
 */
import type { KubeObject } from './helm.js';

interface Model {
  validate(): void;
}
type ModelClass = new (data: unknown) => Model;

/** The package holding the model of an apiVersion. */
const packageOf = (apiVersion: string): string => (apiVersion.startsWith('monitoring.coreos.com/') ? '@kubernetes-models/prometheus-operator' : 'kubernetes-models');

/**
 * The schema problems of `object` as `kind name: message` lines (empty when valid). An apiVersion/kind neither
 * package has is itself a problem.
 */
export async function schemaProblems(object: KubeObject): Promise<string[]> {
  const where = `${object.kind} ${object.metadata.name}`;
  let Model: ModelClass | undefined;
  try {
    const module = (await import(`${packageOf(object.apiVersion)}/${object.apiVersion}/${object.kind}`)) as Record<string, ModelClass | undefined>;
    Model = module[object.kind];
  } catch {
    Model = undefined;
  }
  if (Model === undefined) return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [`${where}: ${(error as Error).message}`];
  }
}
