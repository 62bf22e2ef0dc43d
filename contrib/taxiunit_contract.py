#!/usr/bin/env python3
"""The taxiunitd wire contract for dispatcher teams: schema validation of payloads and the
position decoders (docs/protocol.md, "pos" and "Backfill batches").

    python3 contrib/taxiunit_contract.py validate MESSAGES.jsonl   # {"topic": ..., "payload": ...} per line
        # the payload a string, or the JSON itself as `mosquitto_sub -F %J` writes it
    python3 contrib/taxiunit_contract.py vectors contrib/backfill-vectors.json
    python3 contrib/taxiunit_contract.py examples docs/examples
    python3 contrib/taxiunit_contract.py asyncapi docs/asyncapi.yaml

Needs the jsonschema package (Debian: python3-jsonschema); `asyncapi` also needs PyYAML (python3-yaml).
"""
import json
import math
import os
import re
import sys

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "schemas", "taxiunit.schema.json")

# Topic suffix below {prefix}/{fleet}/{unit}/ -> payload schema in taxiunit.schema.json's $defs.
UNIT_TOPICS = {
    "status": "status", "pos": "pos", "pos/last": "pos_last", "job/offer": "job_offer", "job/cancel": "job_cancel", "job/update": "job_update",
    "job/reply": "job_reply", "event": "event", "sos": "sos", "sos/ack": "sos_ack", "config": "config",
    "config/ack": "config_ack", "cmd": "cmd", "cmd/reply": "cmd_reply", "telemetry": "telemetry",
    "ride": "ride",
    "msg": "msg", "msg/reply": "msg_reply", "msg/read": "msg_read", "queue": "queue", "driver/logout": "driver_logout",
}

COLUMNS = ("t", "lat", "lon", "spd", "hdg", "acc")
SCALES = (1, 1e7, 1e7, 100, 10, 10)


OWNTRACKS_SCHEMA_PATH = os.path.join(os.path.dirname(SCHEMA_PATH), "owntracks-location.schema.json")
OWNTRACKS_LWT_SCHEMA_PATH = os.path.join(os.path.dirname(SCHEMA_PATH), "owntracks-lwt.schema.json")
PROTOCOL_PATH = os.path.join(os.path.dirname(SCHEMA_PATH), "..", "protocol.md")
# What every message of docs/asyncapi.yaml says its payload schema is written in.
SCHEMA_FORMAT = "application/schema+json;version=draft-2020-12"
# The [owntracks] feed's default topic, owntracks/{fleet}/{unit}.
OWNTRACKS_TOPIC = "owntracks/{fleet}/{unit}"


# The fleet-wide topics below {prefix}/{fleet}/ -> payload schema: the fleet's config and the
# broadcasts (docs/protocol.md, "Broadcasts").
FLEET_TOPICS = {"config": "config", "msg": "msg", "zone/{zone}/msg": "msg"}


def schema_name(topic):
    """The payload schema of a topic: {prefix}/{fleet}/config, a broadcast ({prefix}/{fleet}/msg,
    {prefix}/{fleet}/zone/{zone}/msg), {prefix}/{fleet}/{unit}/{suffix}, or an OwnTracks location on
    owntracks/... (the [owntracks] feed's default topic)."""
    levels = topic.split("/")
    if levels[0] == "owntracks":
        return "owntracks"  # location or lwt, by its _type
    if len(levels) == 3 and levels[2] in FLEET_TOPICS:
        return FLEET_TOPICS[levels[2]]
    if len(levels) == 5 and levels[2] == "zone" and levels[4] == "msg":
        return "msg"
    if len(levels) >= 4:
        return UNIT_TOPICS.get("/".join(levels[3:]))
    return None


def strict_json(payload):
    """Parses like the unit: UTF-8, no duplicate keys, no NaN or Infinity."""
    def no_duplicates(pairs):
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    text = payload.decode("utf-8") if isinstance(payload, bytes) else payload
    return json.loads(text, object_pairs_hook=no_duplicates, parse_constant=no_constant)


class Contract:
    def __init__(self, schema_path=SCHEMA_PATH):
        import jsonschema
        with open(schema_path, encoding="utf-8") as file:
            self.bundle = json.load(file)
        self.validators = {}
        for name in self.bundle["$defs"]:
            schema = {"$schema": self.bundle["$schema"], "$ref": f"#/$defs/{name}", "$defs": self.bundle["$defs"]}
            self.validators[name] = jsonschema.Draft202012Validator(schema)
        with open(OWNTRACKS_SCHEMA_PATH, encoding="utf-8") as file:
            self.validators["owntracks_location"] = jsonschema.Draft202012Validator(json.load(file))
        with open(OWNTRACKS_LWT_SCHEMA_PATH, encoding="utf-8") as file:
            self.validators["owntracks_lwt"] = jsonschema.Draft202012Validator(json.load(file))

    def problems(self, topic, payload):
        """What is wrong with one message, as lines; empty when it conforms."""
        name = schema_name(topic)
        if name is None:
            return [f"{topic}: no payload is defined for this topic"]
        if name == "config" and payload in (b"", ""):
            return []  # the fleet deleting its retained document
        if isinstance(payload, (str, bytes)):
            try:
                document = strict_json(payload)
            except ValueError as error:
                return [f"{topic}: not strict JSON: {error}"]
        else:
            document = payload  # already parsed, strictly, with the line that carried it
        if name == "owntracks":
            name = "owntracks_lwt" if isinstance(document, dict) and document.get("_type") == "lwt" else "owntracks_location"
        return [f"{topic}: {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
                for error in self.validators[name].iter_errors(document)]


def decode_backfill(rows):
    """A backfill message's `points` -> a list of {t, lat, lon[, spd, hdg, acc]} dicts, oldest first."""
    previous = [None] * 6
    interval = 0
    points = []
    for row in rows:
        if not 3 <= len(row) <= 6:
            raise ValueError(f"a point has 3 to 6 values, not {len(row)}")
        value = [None] * 6
        for column, delta in enumerate(row):
            if delta is None:
                continue
            if not isinstance(delta, int) or isinstance(delta, bool):
                raise ValueError(f"column {COLUMNS[column]} is not an integer: {delta!r}")
            if column == 0 and previous[0] is not None:
                interval += delta
                previous[0] += interval
            else:
                previous[column] = delta if previous[column] is None else previous[column] + delta
            value[column] = previous[column]
        if None in value[:3]:
            raise ValueError("a point without time or coordinates")
        point = {"t": value[0]}
        for column in range(1, 6):
            if value[column] is not None:
                point[COLUMNS[column]] = value[column] / SCALES[column]
        points.append(point)
    return points


def live_id_time(message_id):
    """The time in a live position's id (9 lowercase base-36 digits of time * 16 + seq % 16), ms."""
    if len(message_id) != 9 or any(c not in "0123456789abcdefghijklmnopqrstuvwxyz" for c in message_id):
        raise ValueError(f"not a live position id: {message_id!r}")
    return int(message_id, 36) // 16


def decode_live(message):
    """A live `pos` message ({"id", "p"[, "age", "stale"]}) -> its point as a dict: the row is a
    backfill row whose time counts from the id's."""
    row = list(message["p"])
    if not row or not isinstance(row[0], int) or isinstance(row[0], bool):
        raise ValueError("a live row starts with the time offset")
    row[0] += live_id_time(message["id"])
    point = decode_backfill([row])[0]
    for key in ("stale", "age"):
        if key in message:
            point[key] = message[key]
    return point


def decode_positions(message):
    """Any `pos` payload -> its points: live, backfill, or protocol 1's live objects."""
    if "p" in message:
        return [decode_live(message)]
    if message.get("backfill") is True:
        return decode_backfill(message["points"])
    return [dict(point) for point in message["points"]]


def check_vectors(path):
    """Every vector's rows (or live payload) decode to its points, each within half a unit of its column."""
    with open(path, encoding="utf-8") as file:
        vectors = json.load(file)
    failures = []
    for vector in vectors:
        if "live" in vector:
            message = strict_json(vector["live"]["payload"])
            decoded = [decode_live(message)]
            for key in ("stale", "age"):
                if decoded[0].get(key) != vector["points"][0].get(key):
                    failures.append(f"{vector['name']}: {key} {decoded[0].get(key)}, expected {vector['points'][0].get(key)}")
        else:
            decoded = decode_backfill(vector["rows"])
        expected = vector["points"]
        if len(decoded) != len(expected):
            failures.append(f"{vector['name']}: {len(decoded)} points, expected {len(expected)}")
            continue
        for index, (got, want) in enumerate(zip(decoded, expected)):
            for column, scale in zip(COLUMNS, SCALES):
                if (column in got) != (column in want):
                    failures.append(f"{vector['name']} point {index}: {column} known {column in got}, expected {column in want}")
                elif column in got and not math.isclose(got[column], want[column], abs_tol=0.5 / scale + 1e-12):
                    failures.append(f"{vector['name']} point {index}: {column} {got[column]}, expected {want[column]}")
    return len(vectors), failures


def check_asyncapi(path):
    """Every reference in the AsyncAPI document resolves (into itself or into the schema bundle), every
    channel has an operation, and every payload of the contract is a message."""
    import yaml
    with open(path, encoding="utf-8") as file:
        document = yaml.safe_load(file)
    with open(SCHEMA_PATH, encoding="utf-8") as file:
        bundle = json.load(file)
    problems = []
    if document.get("asyncapi") != "3.0.0":
        problems.append("asyncapi: not 3.0.0")

    files = {"": document, "./schemas/taxiunit.schema.json": bundle}
    for path in (OWNTRACKS_SCHEMA_PATH, OWNTRACKS_LWT_SCHEMA_PATH):
        with open(path, encoding="utf-8") as file:
            files["./schemas/" + os.path.basename(path)] = json.load(file)

    def resolve(reference):
        target, _, pointer = reference.partition("#")
        node = files.get(target)
        for part in filter(None, pointer.split("/")):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node and resolve(node["$ref"]) is None:
                problems.append(f"unresolved reference {node['$ref']}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    used = {operation["channel"]["$ref"].split("/")[-1] for operation in document.get("operations", {}).values()}
    problems += [f"channel {name} has no operation" for name in document.get("channels", {}) if name not in used]
    messages = document.get("components", {}).get("messages", {})
    problems += [f"payload {name} is not a message" for name in set(UNIT_TOPICS.values()) | {"owntracks_location", "owntracks_lwt"} if name not in messages]
    for name, message in messages.items():
        payload = message.get("payload", {})
        if payload.get("schemaFormat") != SCHEMA_FORMAT or "schema" not in payload:
            problems.append(f"message {name}: the payload does not declare schemaFormat {SCHEMA_FORMAT}")
    addresses = {channel.get("address") for channel in document.get("channels", {}).values()}
    topics = [f"{{prefix}}/{{fleet}}/{{unit}}/{suffix}" for suffix in UNIT_TOPICS] + [f"{{prefix}}/{{fleet}}/{name}" for name in FLEET_TOPICS] + [OWNTRACKS_TOPIC]
    problems += [f"topic {topic} has no channel" for topic in topics if topic not in addresses]
    problems += check_will(document)
    return problems


def check_will(document):
    """Each server's last will is the one docs/protocol.md states: the unit's connection's ("The last
    will is exactly `...`") and the OwnTracks feed's ("The feed's last will is exactly `...`")."""
    with open(PROTOCOL_PATH, encoding="utf-8") as file:
        text = " ".join(file.read().split())
    problems = []
    for server, phrase, name in (("fleetBroker", "The last will", "the last will"), ("ownTracksFeed", "The feed's last will", "the feed's last will")):
        stated = re.findall(re.escape(phrase) + r" is exactly `([^`]*)`", text)
        will = document.get("servers", {}).get(server, {}).get("bindings", {}).get("mqtt", {}).get("lastWill", {})
        if len(stated) != 1:
            problems.append(f"docs/protocol.md states {name} {len(stated)} times, not once")
        elif will.get("message") != stated[0]:
            problems.append(f"{name} is {will.get('message')!r}, docs/protocol.md says {stated[0]!r}")
    return problems


def example_topic(schema):
    """A topic of T042 in fleet demo whose payload is `schema`."""
    if schema.startswith("owntracks_"):
        return "owntracks/demo/T042"
    return "taxi/demo/T042/" + next(topic for topic, name in UNIT_TOPICS.items() if name == schema)


def read_messages(path):
    """(topic, payload) per line of a JSON Lines file, and a problem per line that is not one. A payload
    is a string, or the JSON document itself (`mosquitto_sub -F %J`): the line is parsed strictly, so
    a duplicate key inside such a payload is still found."""
    messages, problems = [], []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = strict_json(line)
                messages.append((record["topic"], record["payload"]))
            except (ValueError, KeyError, TypeError) as error:
                problems.append(f"{path}:{number}: not a message with topic and payload: {error}")
    return messages, problems


def main(arguments):
    if len(arguments) == 2 and arguments[0] == "asyncapi":
        problems = check_asyncapi(arguments[1])
        for problem in problems:
            print(problem)
        print(f"asyncapi: {len(problems)} problems")
        return 1 if problems else 0
    if len(arguments) != 2 or arguments[0] not in ("validate", "vectors", "examples"):
        print(__doc__, file=sys.stderr)
        return 2
    command, path = arguments
    if command == "vectors":
        count, failures = check_vectors(path)
        for failure in failures:
            print(failure)
        print(f"vectors: {count} checked, {len(failures)} wrong")
        return 1 if failures else 0
    contract = Contract()
    if command == "examples":
        # docs/examples/<schema>.json: a list of payloads each; the topic is made up from the name.
        messages = []
        for name in sorted(os.listdir(path)):
            if name.endswith(".json"):
                with open(os.path.join(path, name), encoding="utf-8") as file:
                    messages += [(example_topic(name[:-5]), json.dumps(payload)) for payload in json.load(file)]
        problems = []
    else:
        messages, problems = read_messages(path)
    problems += [problem for topic, payload in messages for problem in contract.problems(topic, payload)]
    for problem in problems:
        print(problem)
    print(f"contract: {len(messages)} messages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
