"""Driver for test/manual/posthog-python-flag-events.ts: one posthog-python client (imported from
$POSTHOG_PYTHON_DIR, a work tree of PostHog/posthog-python) makes the calls described by the JSON in argv[1] with
flag events on, flushes and prints {"version": ...}. Nothing of posthog-python is copied here."""
import json
import os
import sys

sys.path.insert(0, os.environ["POSTHOG_PYTHON_DIR"])

from posthog import Posthog  # noqa: E402
from posthog.version import VERSION  # noqa: E402

run = json.loads(sys.argv[1])
local = run.get("personal_api_key") is not None
client = Posthog(
    run["token"],
    host=run["host"],
    personal_api_key=run.get("personal_api_key"),
    flush_at=1,
    sync_mode=True,
    poll_interval=600,
    disable_geoip=True,
)
if local:
    client.load_feature_flags()
user = run["user"]
flags = client.evaluate_flags(user["distinct_id"], person_properties=user["person_properties"], only_evaluate_locally=local)
for key in run["keys"]:
    flags.get_flag(key)
partial = run["partial"]
for key in run["partial_keys"]:
    client.get_feature_flag(key, partial["distinct_id"], person_properties=partial["person_properties"], only_evaluate_locally=local)
client.flush()
client.shutdown()
print(json.dumps({"version": VERSION}))
