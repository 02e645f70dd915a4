"""The canonical dump: §4's bytes from a store's plain data."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from crashcells import canonical  # noqa: E402


class Canonical(unittest.TestCase):
    def test_defaults_are_left_out_and_sessions_sorted_bytewise(self):
        data = {
            "sessions": [{"id": "é"}, {"id": "b", "branch_of": "a", "message_count": 5}, {"id": "a"}],
            "messages": [{"session_id": "a", "role": "user", "content": "x", "position": 0, "active": False}, {"session_id": "a", "role": "user", "content": "y", "position": None}],
            "obligations": [],
        }
        text = canonical.serialize(canonical.canonical(data, "ok"))
        self.assertEqual(
            text,
            '{"protocol":2,"integrity":"ok","sessions":['
            '{"id":"a","parent_session_id":null,"ended":false,"end_reason":null,"message_count":1,"handoff_state":null},'
            '{"id":"b","parent_session_id":null,"ended":false,"end_reason":null,"message_count":5,"handoff_state":null,"branch_of":"a"},'
            '{"id":"é","parent_session_id":null,"ended":false,"end_reason":null,"message_count":0,"handoff_state":null}],'
            '"messages":[{"session_id":"a","role":"user","content":"x","position":0,"active":false},{"session_id":"a","role":"user","content":"y"}]}',
        )

    def test_the_outbox_is_sorted_and_shown_only_when_not_empty(self):
        data = {"obligations": [{"key": "o1", "state": "attempting"}, {"key": "o0", "state": "delivered"}]}
        state = canonical.canonical(data, "ok")
        self.assertEqual(state["outbox"], [{"key": "o0", "state": "delivered"}, {"key": "o1", "state": "attempting"}])

    def test_a_wrong_shape_names_where(self):
        cases = (
            ([], "not a dict"),
            ({"sessions": [{"id": "a", "ended": 1}]}, 'sessions[0] with "ended" of type int'),
            ({"sessions": [{"id": "a", "message_count": True}]}, '"message_count" of type bool'),
            ({"messages": [{"session_id": "a", "role": "user"}]}, 'messages[0] without "content"'),
            ({"messages": [{"session_id": "a", "role": "user", "content": "x", "rowid": 1}]}, 'unknown field "rowid"'),
            ({"obligations": [{"key": "o0", "state": "sent"}]}, '"state" "sent"'),
            ({"outbox": []}, 'unknown field "outbox"'),
        )
        for data, words in cases:
            with self.assertRaises(canonical.ShapeError) as e:
                canonical.canonical(data, "ok")
            self.assertIn(words, str(e.exception))

    def test_the_live_transcript_follows_branches(self):
        data = {
            "sessions": [{"id": "main"}, {"id": "main~3", "branch_of": "main"}],
            "messages": [
                {"session_id": "main", "role": "user", "content": "m0"},
                {"session_id": "main~3", "role": "user", "content": "m0"},
                {"session_id": "main~3", "role": "user", "content": "m4", "active": False},
            ],
        }
        self.assertEqual(canonical.live_length(canonical.canonical(data, "ok"), "main"), 1)
