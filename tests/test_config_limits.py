"""Configuration is checked before any work, each error naming the variable or key (issue #37).

Environment settings (``modelgate.config``) and JSON options (``modelgate.json_input``);
the policy's own cases are in ``tests/evaluation/test_eval_policy.py``, the CLI's in
``tests/reliability/test_hostile_cli.py``, the DAG params' in ``tests/dags/test_dag_evaluation.py``.
The limits are written out here (7 days of seconds, PostgreSQL's integer and bigint), not
read from the code under test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelgate.config import ConfigError, Settings, dag_retries
from modelgate.json_input import JsonInputError, check_json_value, loads_object

SEVEN_DAYS_S = 7 * 24 * 60 * 60  # S3 signature version 4's longest presigned URL
PG_INTEGER_MAX = 2_147_483_647
PG_BIGINT_MAX = 9_223_372_036_854_775_807


# --- environment ------------------------------------------------------------------------------

ENV_REFUSED = {
    # the tester's case: accepted at start, the run failed at the report link after scoring
    "presign-over-7-days": ("MODELGATE_PRESIGN_EXPIRY_S", str(SEVEN_DAYS_S + 1),
                            "MODELGATE_PRESIGN_EXPIRY_S must be a whole number from 1 to 604,800, "
                            "got '604801'"),
    "presign-zero": ("MODELGATE_PRESIGN_EXPIRY_S", "0", "from 1 to 604,800, got '0'"),
    "presign-400-digits": ("MODELGATE_PRESIGN_EXPIRY_S", "9" * 400, "(402 characters)"),
    "presign-5000-digits": ("MODELGATE_PRESIGN_EXPIRY_S", "9" * 5000, "(5,002 characters)"),
    "presign-float": ("MODELGATE_PRESIGN_EXPIRY_S", "3600.5", "got '3600.5'"),
    "presign-superscript": ("MODELGATE_PRESIGN_EXPIRY_S", "3²", "got '3²'"),
    "stale-minutes-past-integer": ("MODELGATE_STALE_RUN_MINUTES", str(PG_INTEGER_MAX + 1),
                                   "MODELGATE_STALE_RUN_MINUTES must be a whole number from 1 to "
                                   "2,147,483,647"),
    "min-group-negative": ("MODELGATE_MIN_GROUP_SIZE", "-3", "MODELGATE_MIN_GROUP_SIZE must be"),
    "bucket-newline": ("MODELGATE_S3_BUCKET", "models\nforged", "MODELGATE_S3_BUCKET must not "
                       "contain control characters such as '\\n'; got 'models\\nforged'"),
    "policy-dir-nul": ("MODELGATE_POLICY_DIR", "/etc/\x00", "MODELGATE_POLICY_DIR must not contain"),
}


@pytest.mark.parametrize(("name", "value", "message"), ENV_REFUSED.values(), ids=ENV_REFUSED.keys())
def test_a_setting_out_of_range_is_refused_naming_the_variable(name: str, value: str,
                                                               message: str) -> None:
    env = {"MODELGATE_HOME": "/tmp/mg", "MODELGATE_S3_ENDPOINT": "localhost:9000",
           "MODELGATE_S3_ACCESS_KEY": "a", "MODELGATE_S3_SECRET_KEY": "b", name: value}
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    assert message in str(caught.value)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("value", ["1", str(SEVEN_DAYS_S), " 3600 "], ids=["one", "seven-days", "blanks"])
def test_the_presign_expiry_takes_1_s_to_7_days(value: str) -> None:
    assert Settings.from_env({"MODELGATE_PRESIGN_EXPIRY_S": value}).presign_expiry_s == int(value)


def test_a_secret_with_a_control_character_is_refused_without_showing_it() -> None:
    env = {"MODELGATE_S3_ENDPOINT": "localhost:9000", "MODELGATE_S3_ACCESS_KEY": "a",
           "MODELGATE_S3_SECRET_KEY": "hunter2\n"}
    with pytest.raises(ConfigError, match="MODELGATE_S3_SECRET_KEY must not contain") as caught:
        Settings.from_env(env)
    assert "hunter2" not in str(caught.value)


def test_dag_retries_are_a_small_whole_number() -> None:
    assert dag_retries({"MODELGATE_DAG_RETRIES": "3"}) == 3
    for bad in ("-1", "101", "one", "9" * 400):
        with pytest.raises(ConfigError, match="MODELGATE_DAG_RETRIES must be a whole number from 0 to 100"):
            dag_retries({"MODELGATE_DAG_RETRIES": bad})


# --- JSON options -------------------------------------------------------------------------------

JSON_REFUSED = {
    # the tester's case: the last, looser value won (the YAML loader refuses it)
    "key-twice": ('{"relative": 1.2, "relative": 9}',
                  "--thresholds: key 'relative' is given twice in one object"),
    "key-twice-nested": ('{"features": {"age": {"relative": 1, "relative": 2}}}', "given twice"),
    "400-digits": ('{"relative": %s}' % ("9" * 400),
                   "--thresholds: the value of key 'relative' must be a finite number (integers "
                   "within +-9,223,372,036,854,775,807), got <a number of 400 characters>"),
    "past-bigint": ('{"n": ' + str(PG_BIGINT_MAX + 1) + "}", "got '9223372036854775808'"),
    "below-bigint": ('{"n": ' + str(-(PG_BIGINT_MAX + 1)) + "}", "got '-9223372036854775808'"),
    "float-overflow": ('{"features": {"age": {"relative": 1e400}}}',
                       "the value of key 'features'.'age'.'relative' must be a finite number"),
    "nan": ('{"relative": NaN}', "got 'NaN'"),
    "infinity": ('{"relative": -Infinity}', "got '-Infinity'"),
    "in-a-list": ('{"a": [1, NaN]}', "the value of key 'a'[1] must be a finite number"),
    "deep-objects": ('{"a": ' * 10_000 + "1" + "}" * 10_000, "--thresholds: nests deeper than 32 levels"),
    "deep-lists": ("[" * 100_000 + "]" * 100_000, "nests deeper than 32 levels (at character 33)"),
    "nul-in-key": ('{"a\\u0000": 1}', "key 'a\\x00' holds a control character '\\x00'"),
    "escape-in-key": ('{"features": {"age\\u001b[2J": {}}}', "holds a control character '\\x1b'"),
    "nul-in-value": ('{"a": "x\\u0000"}', "the value of key 'a' must not contain a NUL character"),
    "not-an-object": ("[1]", "--thresholds: must be a JSON object, got '[1]'"),
    "not-json": ("{relative: 2", "--thresholds: must be a JSON object, got '{relative: 2'"),
}


@pytest.mark.parametrize(("text", "message"), JSON_REFUSED.values(), ids=JSON_REFUSED.keys())
def test_a_json_option_breaking_a_limit_is_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(JsonInputError) as caught:
        loads_object(text, where="--thresholds")
    assert message in str(caught.value)
    assert len(str(caught.value)) < 400


def test_a_json_option_within_the_limits_reads_as_json_does() -> None:
    text = ('{"relative": 1.8, "features": {"age": {"relative": 3}}, '
            f'"n": [{PG_BIGINT_MAX}, {-PG_BIGINT_MAX}, 0.5, "x"], "s": "[{{\\"}}"}}')
    assert loads_object(text, where="x") == json.loads(text)
    nested = '{"a": ' * 32 + "1" + "}" * 32  # exactly the limit
    assert loads_object(nested, where="x") == json.loads(nested)


def test_an_already_parsed_value_gets_the_same_limits() -> None:
    """The drift DAG's ``thresholds`` param: Airflow parsed the conf, so only the values are
    left to check (a duplicate key is gone by then)."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(40):
        node["a"] = {}
        node = node["a"]
    for value, message in [({"relative": float("inf")}, "'relative' must be a finite number"),
                           ({"n": 10**400}, "must be an integer within"),
                           ({"f\x00": 1}, "holds a control character"),
                           (deep, "nests deeper than 32 levels")]:
        with pytest.raises(JsonInputError, match=message):
            check_json_value(value, where="drift_monitoring param 'thresholds'")
