// OpenFeature in Node against the sidecar, through the generic OFREP provider: no PostHog SDK in the app.
// Run beside a sidecar (`npm start` serves the example snapshot offline):
//   node examples/ofrep-node.mjs [sidecar URL] [project token]
// Any OpenFeature SDK with an OFREP provider (Go, Java, .NET, Python, PHP, Ruby, …) is set up the same way.
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OpenFeature } from '@openfeature/server-sdk';

const [url = 'http://127.0.0.1:8010', token = 'phc_flag_sidecar_example_project'] = process.argv.slice(2);
await OpenFeature.setProviderAndWait(new OFREPProvider({ baseUrl: url, headers: [['Authorization', `Bearer ${token}`]] }));
const client = OpenFeature.getClient();

// targetingKey is the distinct id; `groups` and `group_properties` are reserved; everything else is a person property.
const context = { targetingKey: 'user-1', email: 'dev@example.com', groups: { company: 'acme' }, group_properties: { company: { plan: 'enterprise' } } };
const details = await client.getBooleanDetails('internal-tools', false, context);
console.log(JSON.stringify({ value: details.value, reason: details.reason, payload: details.flagMetadata.payload ?? null }));
await OpenFeature.close();
