#!/usr/bin/env python
# coding: utf-8

# # Bounded loop, unit A — my work

# In[ ]:


import sys
from pathlib import Path

COURSE_ROOT = Path("course-runtime").resolve()
sys.path.insert(0, str(COURSE_ROOT))
from agentloop_runtime.shop import build_tools, SHOP

COURSE_WORK = Path("practical-work/ch03-a")
COURSE_WORK.mkdir(parents=True, exist_ok=True)


# In[ ]:


prediction_notes = {
    'falsifier': 'If a failed provider attempt left model_calls unchanged, my idea that charging happens before the attempt would be wrong.',
    'prediction': 'I think the loop makes 3 model calls and 3 tool calls and ends COMPLETED with 6 cents charged.',
    'reason': 'Three authored turns at 2 cents each fit the 8 cent budget and the 4 call limit, and turn two asks for two drafts.',
    'revision': 'I had counted tool calls per turn at first; the loop counts each call, so turn two adds two.',
}


# In[ ]:


get_ipython().run_line_magic('pip', 'install "pydantic==2.13.4"')


# In[ ]:


def decide_admission(case):
    """Return CALL, MODEL_CALL_LIMIT, or MODEL_COST_LIMIT."""
    if case["used_calls"] >= case["max_calls"]:
        return "MODEL_CALL_LIMIT"
    if case["spent"] + case["next_cost"] > case["budget"]:
        return "MODEL_COST_LIMIT"
    return "CALL"


# In[ ]:


import copy
import json

VISIBLE_CASES = [
    ({"used_calls": 0, "max_calls": 3, "spent": 0, "next_cost": 2, "budget": 6}, "CALL"),
    ({"used_calls": 3, "max_calls": 3, "spent": 0, "next_cost": 0, "budget": 6}, "MODEL_CALL_LIMIT"),
    ({"used_calls": 1, "max_calls": 3, "spent": 5, "next_cost": 2, "budget": 6}, "MODEL_COST_LIMIT"),
    ({"used_calls": 1, "max_calls": 3, "spent": 4, "next_cost": 2, "budget": 6}, "CALL"),
]
results = []
for case, expected in VISIBLE_CASES:
    given = copy.deepcopy(case)
    results.append(decide_admission(given) == expected and given == case)
VISIBLE_PASSED = all(results)
print("VISIBLE_CONTRACT", "PASSED" if VISIBLE_PASSED else "NEEDS_WORK")


# In[ ]:


dispatcher = build_tools(SHOP)
connected = run_loop(ReplayModel(OPENING_TURNS), dispatcher, INITIAL_MESSAGES, decide_admission)
print(connected["status"], connected["model_calls"], connected["tool_calls"])


# In[ ]:


def transfer_check(state):
    if state["calls"] >= state["max_calls"]:
        return "CALL_LIMIT"
    if state["spent"] + state["next_cost"] > state["budget"]:
        return "COST_LIMIT"
    return "CALL"


# In[ ]:


TRANSFER_CASES = [
    ("exact fit", [{"calls": 1, "max_calls": 3, "spent": 4, "next_cost": 3, "budget": 7}], "CALL"),
    ("next attempt too costly", [{"calls": 1, "max_calls": 3, "spent": 4, "next_cost": 4, "budget": 7}], "COST_LIMIT"),
    ("two exhausted limits", [{"calls": 3, "max_calls": 3, "spent": 7, "next_cost": 1, "budget": 7}], "CALL_LIMIT"),
    ("zero allowed attempts", [{"calls": 0, "max_calls": 0, "spent": 0, "next_cost": 0, "budget": 0}], "CALL_LIMIT"),
]


# In[ ]:


TRANSFER_CASES.append(
    ("cheaper estimate fits after a costly one", [{"calls": 2, "max_calls": 4, "spent": 5, "next_cost": 1, "budget": 6}], "CALL")
)
transfer_observations = run_transfer(transfer_check, TRANSFER_CASES)


# In[ ]:


explanation_notes = {
    'causal_trace': 'The row used_calls=1, spent=5, next_cost=2, budget=6 gives 7 > 6, so decide_admission returned MODEL_COST_LIMIT before the provider was called.',
    'failed_hypothesis': 'I expected the zero-budget case to return MODEL_COST_LIMIT, but max_calls=0 makes the call limit win because it is checked first.',
    'remaining_limit': 'The scripted turns do not show what a real provider would bill or how a live model would choose its tools.',
}


# In[ ]:


course_submission = {
    "unit": "ch03-a",
    "prediction": prediction_notes,
    "explanation": explanation_notes,
    "transfer": transfer_observations,
    "explanation_review": "HUMAN_REVIEW_REQUIRED",
}
(COURSE_WORK / "ch03-a-submission-v1.json").write_text(json.dumps(course_submission, indent=2, sort_keys=True))

