"""What the evidence files claim, checked against what the student's code does and what the runs must give."""

import json

import pytest

from autograder import judge
from autograder.sandbox import Opaque
from reference import ADMISSION, VISIBLE_ADMISSION

PART = "evidence"
CALL_COST = 2  # the unit's loop charges 2 cents an attempt
OPENING_RUN = ("COMPLETED", 3, 3)  # the opening turns: stock, two drafts, an answer
SCRIPTED = {
    "status": "COMPLETED",
    "model_calls": 5,
    "tool_calls": 6,
    "estimated_cost_cents": 10,
    "refused": [{"call": "scripted-3-call-2", "reason": "DRAFT_COST_LIMIT", "exposure_cents": 2600}],
    "drafted": ["SKU-VANILLA"],
    "own_loop_agrees": True,
}
LIMITS = {"call_limit": "MODEL_CALL_LIMIT", "cost_limit": "MODEL_COST_LIMIT", "tool_limit": "TOOL_LIMIT", "precedence": "MODEL_CALL_LIMIT"}
NEED = {"SKU-VANILLA": 6, "SKU-STRAWBERRY": 4}
DRAFT_BUDGET_CENTS = 2500
LIVE_LIMITS = {"model_calls": 8, "budget_cents": 20}


def tag(group, kind):
    return pytest.mark.part(PART, group=group, kind=kind)


def data(evidence, check, key):
    item = evidence[key]
    check.that(item.present, f"{item.filename} is not in your upload")
    check.that(type(item.data) is dict, item.problem or f"{item.filename} does not hold a JSON object")
    return item.data


def field(check, mapping, name, kind, where):
    value = mapping.get(name) if type(mapping) is dict else None
    check.that(type(value) is kind, f"{where}.{name} is missing or not a {kind.__name__}")
    return value


# --- transfer rows --------------------------------------------------------------------------
def driver_view(observation):
    """What the notebook's transfer driver writes as `observed` for one call."""
    if observation.outcome == "raised" and observation.raised.type_name == "NotImplementedError":
        return {"unfinished": True}, False
    if observation.outcome == "raised":
        return {"raises": observation.raised.type_name}, False
    if not observation.ok:
        return None, False
    return observation.returned, True


def plain(value):
    """JSON has no tuples: compare as the file would hold it. Opaque values stay unequal to all."""
    return value if isinstance(value, Opaque) else json.loads(json.dumps(value))


@pytest.mark.part(PART, group="transfer_rows", kind="one row per case in TRANSFER_CASES")
def test_every_transfer_case_has_its_row(student, evidence, check):
    rows = field(check, data(evidence, check, "submission"), "transfer", list, "ch03-a-submission-v1.json")
    cases = student.value("TRANSFER_CASES")
    check.that(cases.ok and type(cases.returned) in (list, tuple), "TRANSFER_CASES could not be read from your notebook")
    labels = [case[0] if type(case) in (list, tuple) and case else None for case in cases.returned]
    saved = [row.get("case") if type(row) is dict else None for row in rows]
    check.that(saved == labels, "the saved transfer rows are not the cases in TRANSFER_CASES; run the notebook again and save", labels=labels, saved=saved)


@pytest.mark.part(PART, group="transfer_rows", kind="rows match a re-run of transfer_check")
def test_the_transfer_rows_match_a_rerun_of_the_function(student, evidence, check):
    rows = field(check, data(evidence, check, "submission"), "transfer", list, "ch03-a-submission-v1.json")
    cases = student.value("TRANSFER_CASES")
    check.that(cases.ok and type(cases.returned) in (list, tuple), "TRANSFER_CASES could not be read from your notebook")
    by_label = {case[0]: case for case in cases.returned if type(case) in (list, tuple) and len(case) == 3 and type(case[0]) is str}
    for row in rows:
        check.that(type(row) is dict and row.get("case") in by_label, "a saved row names a case that is not in TRANSFER_CASES", row=row)
        _, arguments, expected = by_label[row["case"]]
        arguments = list(arguments) if type(arguments) in (list, tuple) else [arguments]
        observation = student.call("transfer_check", *arguments)
        observed, returned = driver_view(observation)
        correct = returned and judge.same(plain(observed), plain(expected))
        passed = bool(correct) and judge.same(observation.args_after, tuple(arguments))
        check.that(
            judge.same(plain(row.get("observed")), plain(observed)) and row.get("passed") is passed,
            f"the saved row for case {row['case']!r} differs from what your transfer_check does now; run the notebook again and save",
            saved=row,
            rerun={"observed": observed, "passed": passed},
        )


# --- core report ----------------------------------------------------------------------------
def visible_passed(student) -> bool:
    for _, values in VISIBLE_ADMISSION:
        state = ADMISSION.state(*values)
        observation = student.call("decide_admission", state)
        if not (judge.expect_value(observation, ADMISSION.decide(state)).passed and judge.same(observation.args_after, (state,))):
            return False
    return True


@pytest.mark.part(PART, group="core_report", kind="counts match the visible contract")
def test_the_core_report_matches_the_visible_contract(student, evidence, check):
    report = field(check, data(evidence, check, "submission"), "core_report", dict, "ch03-a-submission-v1.json")
    passed = visible_passed(student)
    expected = {
        "unit": "ch03-a",
        "attempted": 1,
        "completed": int(passed),
        "failed": int(not passed),
        "skipped": 0,
        "connection": "PASSED" if passed else "NOT_READY",
        "handoff": "WRITTEN" if passed else "NOT_WRITTEN",
    }
    check.that(judge.same(report, expected), "core_report does not match what your decide_admission does on the visible cases", saved=report, rerun=expected)


@pytest.mark.part(PART, group="core_report", kind="handoff file agrees with the report")
def test_the_handoff_file_exists_exactly_when_the_report_says_written(evidence, check):
    report = field(check, data(evidence, check, "submission"), "core_report", dict, "ch03-a-submission-v1.json")
    written = report.get("handoff") == "WRITTEN"
    check.that(written == evidence["handoff"].present, "core_report.handoff and the uploaded files disagree about the handoff file")


# --- handoff transcript ---------------------------------------------------------------------
def transcript(evidence, check):
    handoff = data(evidence, check, "handoff")
    messages = field(check, handoff, "messages", list, "handoff")
    check.that(all(type(m) is dict for m in messages), "handoff.messages holds something that is not a message")
    return handoff, messages


@pytest.mark.part(PART, group="handoff", kind="every observation answers an earlier request")
def test_every_tool_message_answers_an_earlier_request(evidence, check):
    _, messages = transcript(evidence, check)
    requested, answered = set(), []
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            requested.update(c.get("id") for c in message.get("tool_calls") or [] if type(c) is dict)
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            check.that(call_id in requested and call_id not in answered, f"messages[{index}] answers a tool_call_id no earlier request made, or answers it twice")
            answered.append(call_id)
    check.that(set(answered) == requested, "a tool request in the transcript has no observation")


@pytest.mark.part(PART, group="handoff", kind="counters match the messages")
def test_the_counters_match_the_messages(evidence, check):
    handoff, messages = transcript(evidence, check)
    assistants = sum(m.get("role") == "assistant" for m in messages)
    tools = sum(m.get("role") == "tool" for m in messages)
    model_calls = field(check, handoff, "model_calls", int, "handoff")
    expected_calls = assistants + (1 if handoff.get("status") == "MODEL_FAILED" else 0)
    check.that(model_calls == expected_calls, "model_calls does not match the assistant messages", model_calls=model_calls, assistants=assistants)
    check.that(field(check, handoff, "tool_calls", int, "handoff") == tools, "tool_calls does not match the tool messages")
    check.that(field(check, handoff, "estimated_cents", int, "handoff") == CALL_COST * model_calls, "estimated_cents is not 2 cents per admitted attempt")


@pytest.mark.part(PART, group="handoff", kind="the opening run completed")
def test_the_opening_run_completed_with_three_calls_and_three_tools(evidence, check):
    handoff, _ = transcript(evidence, check)
    counts = (handoff.get("status"), handoff.get("model_calls"), handoff.get("tool_calls"))
    check.that(counts == OPENING_RUN, "the saved opening run did not end COMPLETED after 3 model calls and 3 tool calls", saved=counts)


# --- lab report -----------------------------------------------------------------------------
@pytest.mark.part(PART, group="lab_report", kind="scripted run")
def test_the_scripted_run_has_the_known_outcome(evidence, check):
    scripted = field(check, data(evidence, check, "lab_report"), "scripted", dict, "lab report")
    wrong = [key for key, value in SCRIPTED.items() if not judge.same(scripted.get(key), value)]
    check.that(not wrong, f"the scripted run differs from the known outcome in: {', '.join(wrong)}", saved=scripted)


@pytest.mark.part(PART, group="lab_report", kind="each limit ends the loop")
def test_each_limit_ends_the_loop_with_its_status(evidence, check):
    limits = field(check, data(evidence, check, "lab_report"), "limits", dict, "lab report")
    wrong = [key for key, value in LIMITS.items() if limits.get(key) != value]
    check.that(not wrong, f"these limit runs ended with another status: {', '.join(wrong)}", saved=limits)


@pytest.mark.part(PART, group="lab_report", kind="session record is consistent")
def test_the_session_record_is_consistent_with_its_source(evidence, check):
    session = field(check, data(evidence, check, "lab_report"), "session", dict, "lab report")
    if session.get("source") == "scripted":
        same = all(judge.same(session.get(k), SCRIPTED[k]) for k in ("status", "model_calls", "tool_calls", "estimated_cost_cents", "refused"))
        check.that(same and session.get("model") is None, "a scripted session must repeat the scripted run's numbers and name no model", saved=session)
        return
    check.that(session.get("source") == "live" and type(session.get("model")) is str, "session.source must be scripted or live, and a live run names its model")
    calls = session.get("model_calls")
    check.that(type(calls) is int and 0 <= calls <= LIVE_LIMITS["model_calls"], "a live run cannot exceed 8 model calls")
    check.that(session.get("estimated_cost_cents") == CALL_COST * calls <= LIVE_LIMITS["budget_cents"], "a live run's exposure is 2 cents per call within 20 cents")
    drafted = session.get("drafted") if type(session.get("drafted")) is list else []
    check.that(all(type(d) is dict and NEED.get(d.get("sku")) == d.get("quantity") for d in drafted), "a live draft has a quantity the shop does not need")
    total = sum({"SKU-VANILLA": 250, "SKU-STRAWBERRY": 275}.get(d["sku"], 0) * d["quantity"] for d in drafted)
    check.that(total <= DRAFT_BUDGET_CENTS, "the live drafts exceed the 2500-cent draft budget")
