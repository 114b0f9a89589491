#!/usr/bin/env python3
"""Writes tests/agreement/agreement.jr2: the versions of one program that the agreement test
(agreement_test.cpp, #36) checks `jr2c diff` against the runtime's own restore with.

The program is the tickets sample's review and Pool with alert-triage's second look (a child
machine with its own Gate, a nested state, timers, context values), and restore.jr2's shapes.
Version 0 is that program; each later version is version 0 with ONE seeded edit: a state renamed
or removed, an invoke or `after` added, removed or changed, a `var` or parameter added, removed
or retyped, a record field added or removed, a Pool's cap, worker or name changed, a workflow
renamed. In the file, version k's declarations are named `vKK_…` (the events are shared); the
test swaps a snapshot's `vII_` for `vJJ_` to restore a run of version i as version j (as
restore_test.cpp does), and strips the prefix to give `jr2c diff` version i and version j as
two programs with the same names.

  python3 tests/agreement/generate.py           # writes agreement.jr2 beside this script
  python3 tests/agreement/generate.py --check   # exit 1 when the file is not what this writes
"""
import pathlib
import sys

HEADER = """\
// The versions of one program for the agreement test of `jr2c diff` (#36): written by
// tests/agreement/generate.py; do not edit it, edit the generator and run it again. Version 0
// (`v00_…`) is the tickets sample's review and Pool with a second look; version k is version 0
// with the one edit its comment names. The events are shared by every version.
event agr_approve external "Accept the ticket."
event agr_reject external "Refuse the ticket." {
  reason: string "Why, in one sentence."
}
event agr_escalate external "Send it to a second look."
event agr_pass external "The check passed."
event agr_rethink external "Look at it again." {
  note: string "What was missed."
}
"""

# Version 0. `@` is the version's prefix: `v07_` in the file, nothing in what `jr2c diff` reads.
BASE = """\
type @Ticket {
  id: string
  title: string
  needs: list<string> = []
}

type @Outcome {
  id: string
  outcome: "approved" | "rejected"
  reason: string?
}

source @tickets(items: list<@Ticket>): @Ticket {
  next: std.queue(items)
}

machine @check(ticket: @Ticket) {
  initial state checking {
    invoke gate checking { title: ticket.title }
    on agr_pass -> passed
    after 2h -> passed
  }
  final state passed
}

machine @review(ticket: @Ticket, urgency: "low" | "high" = "low") -> @Outcome {
  var outcome: @Outcome? = null
  var note: string? = null
  var rounds: int = 0
  var level: "low" | "high" = "low"
  var tags: list<"a" | "b"> = []

  initial state triage {
    invoke gate triage { title: ticket.title }
    on agr_approve -> decided {
      outcome = { id: ticket.id, outcome: "approved" }
    }
    on agr_reject -> decided {
      outcome = { id: ticket.id, outcome: "rejected", reason: event.reason }
    }
    on agr_escalate -> review {
      rounds = rounds + 1
      level = "high"
      tags = ["b"]
    }
    after 15m -> review
  }
  state review {
    initial state checking {
      invoke @check(ticket) as check
      invoke gate second_look
      on done as check -> decided {
        outcome = { id: ticket.id, outcome: "approved" }
      }
      on agr_escalate -> escalated
    }
    state escalated {
      invoke gate escalated { title: ticket.title }
      on agr_approve -> decided {
        outcome = { id: ticket.id, outcome: "approved" }
      }
      on agr_rethink -> triage {
        note = event.note
      }
      after 1h -> decided {
        outcome = { id: ticket.id, outcome: "rejected", reason: "nobody answered" }
      }
    }
  }
  final state decided

  output outcome!
}

pool @work(items: list<@Ticket>, mode: "fast" | "slow" = "fast") of @review {
  source: @tickets(input.items)
  item_id: item.id
  item_input: { ticket: item }
  cap: 2
}

workflow @flow = @work
workflow @single = @review
"""

CHECK_DONE = """      on done as check -> decided {
        outcome = { id: ticket.id, outcome: "approved" }
      }
"""

ESCALATED = """    state escalated {
      invoke gate escalated { title: ticket.title }
      on agr_approve -> decided {
        outcome = { id: ticket.id, outcome: "approved" }
      }
      on agr_rethink -> triage {
        note = event.note
      }
      after 1h -> decided {
        outcome = { id: ticket.id, outcome: "rejected", reason: "nobody answered" }
      }
    }
"""

# Each edit: what it is, and its replacements (old, new[, how many times old occurs]).
EDITS = [
    ("the nested state `review.escalated` renamed `raised`",
     [("state escalated {", "state raised {"), ("-> escalated", "-> raised")]),
    ("the nested state `review.escalated` removed",
     [(ESCALATED, ""),
      ("on agr_escalate -> escalated", "on agr_escalate -> decided\n      on agr_rethink -> triage")]),
    ("the compound state `review` renamed `second`",
     [("  state review {", "  state second {"), ("-> review", "-> second", 2)]),
    ("the initial state `triage` renamed `intake`",
     [("initial state triage {", "initial state intake {"), ("-> triage", "-> intake")]),
    ("a state `parked` added, entered from `triage`",
     [("  final state decided\n",
       "  state parked {\n    invoke gate parked\n    on agr_approve -> decided\n  }\n"
       "  final state decided\n"),
      ("    after 15m -> review\n", "    after 15m -> review\n    on agr_pass -> parked\n")]),
    ("a second Gate invoked in `triage` (the ids after it move)",
     [("    invoke gate triage { title: ticket.title }\n",
       "    invoke gate aside\n    invoke gate triage { title: ticket.title }\n"),
      ("    after 15m -> review\n", "    after 15m -> review\n    on agr_pass {}\n")]),
    ("the child `check` no longer invoked in `review.checking`",
     [("      invoke @check(ticket) as check\n", ""), (CHECK_DONE, "")]),
    ("the child `check` invoked as `verify`",
     [("as check", "as verify", 2)]),
    ("an `after 30m` added to `review.escalated`",
     [("      after 1h -> decided {", "      after 30m -> triage\n      after 1h -> decided {")]),
    ("the `after 1h` of `review.escalated` removed",
     [("      after 1h -> decided {\n"
       "        outcome = { id: ticket.id, outcome: \"rejected\", reason: \"nobody answered\" }\n"
       "      }\n", "")]),
    ("the `after 1h` of `review.escalated` made `after 2h`",
     [("after 1h -> decided", "after 2h -> decided")]),
    ("the `after 15m` of `triage` made `after 20m`",
     [("after 15m -> review", "after 20m -> review")]),
    ("the `after 2h` of `check.checking` removed",
     [("    after 2h -> passed\n", "")]),
    ("`var rounds` made a `float`",
     [("var rounds: int = 0", "var rounds: float = 0.0"),
      ("rounds = rounds + 1", "rounds = rounds + 1.0")]),
    ("`var rounds` made a `string`",
     [("var rounds: int = 0", "var rounds: string = \"\""),
      ("rounds = rounds + 1", "rounds = rounds + \"+\"")]),
    ("`var note` made a `string` (no longer optional)",
     [("var note: string? = null", "var note: string = \"\"")]),
    ("a `var seen` added",
     [("  var rounds: int = 0\n", "  var rounds: int = 0\n  var seen: int = 0\n")]),
    ("`var rounds` removed",
     [("  var rounds: int = 0\n", ""), ("      rounds = rounds + 1\n", "")]),
    ("a parameter `priority` with a default added to `review`",
     [("urgency: \"low\" | \"high\" = \"low\")", "urgency: \"low\" | \"high\" = \"low\", priority: int = 1)")]),
    ("a parameter `priority` without a default added to `review`",
     [("urgency: \"low\" | \"high\" = \"low\")", "urgency: \"low\" | \"high\" = \"low\", priority: int)"),
      ("item_input: { ticket: item }", "item_input: { ticket: item, priority: 1 }")]),
    ("a field `owner` with a default added to `Ticket`",
     [("  needs: list<string> = []\n", "  needs: list<string> = []\n  owner: string = \"\"\n")]),
    ("a required field `owner` added to `Ticket`",
     [("  needs: list<string> = []\n", "  needs: list<string> = []\n  owner: string\n")]),
    ("the field `needs` removed from `Ticket`",
     [("  needs: list<string> = []\n", "")]),
    ("a literal `deferred` added to `Outcome.outcome`",
     [("outcome: \"approved\" | \"rejected\"", "outcome: \"approved\" | \"rejected\" | \"deferred\"")]),
    ("`Outcome.reason` no longer optional (with a default)",
     [("  reason: string?\n", "  reason: string = \"\"\n")]),
    ("the state `checking` of `check` renamed `waiting`",
     [("  initial state checking {\n    invoke gate checking", "  initial state waiting {\n    invoke gate checking")]),
    ("the machine `check` removed",
     [("machine @check(ticket: @Ticket) {\n  initial state checking {\n"
       "    invoke gate checking { title: ticket.title }\n    on agr_pass -> passed\n"
       "    after 2h -> passed\n  }\n  final state passed\n}\n\n", ""),
      ("      invoke @check(ticket) as check\n", ""), (CHECK_DONE, "      on agr_pass -> decided\n")]),
    ("the Pool's cap made 3",
     [("  cap: 2\n", "  cap: 3\n")]),
    ("the Pool's worker made another machine",
     [("of @review {", "of @review2 {"),
      ("workflow @flow", "machine @review2(ticket: @Ticket) -> @Outcome {\n"
       "  initial state triage {\n    invoke gate triage { title: ticket.title }\n"
       "    on agr_approve -> decided\n  }\n  final state decided\n\n"
       "  output { id: ticket.id, outcome: \"approved\" }\n}\n\nworkflow @flow")]),
    ("the Pool renamed `queue`",
     [("pool @work(", "pool @queue("), ("workflow @flow = @work", "workflow @flow = @queue")]),
    ("the workflow `flow` runs the review alone, not the Pool",
     [("workflow @flow = @work", "workflow @flow = @review")]),
    ("the workflow `single` renamed `solo`",
     [("workflow @single", "workflow @solo")]),
    ("the Gate of `triage` named `intake`",
     [("invoke gate triage {", "invoke gate intake {")]),
    ("a transition's target changed: `escalated`'s approval goes back to `triage`",
     [("      on agr_approve -> decided {\n        outcome = { id: ticket.id, outcome: \"approved\" }\n"
       "      }\n      on agr_rethink",
       "      on agr_approve -> triage\n      on agr_rethink")]),
    ("a guard added to `triage`'s escalation",
     [("on agr_escalate -> review {", "on agr_escalate if rounds < 3 -> review {")]),
    ("an `entry` added to `review`",
     [("  state review {\n", "  state review {\n    entry {\n      rounds = rounds + 10\n    }\n")]),
    ("the states of `review` in another order",
     [(ESCALATED, ""),
      ("    initial state checking {\n", ESCALATED + "    initial state checking {\n")]),
    ("an `after 45m` added to the compound state `review`",
     [("  state review {\n", "  state review {\n    after 45m -> decided\n")]),
    ("the invokes of `review.checking` in another order",
     [("      invoke @check(ticket) as check\n      invoke gate second_look\n",
       "      invoke gate second_look\n      invoke @check(ticket) as check\n")]),
    ("`var level`'s literal `high` made `urgent`",
     [("var level: \"low\" | \"high\"", "var level: \"low\" | \"urgent\""),
      ("level = \"high\"", "level = \"urgent\"")]),
    ("`var tags`' literal `b` made `c` (inside a list: read as a plain string)",
     [("var tags: list<\"a\" | \"b\">", "var tags: list<\"a\" | \"c\">"),
      ("tags = [\"b\"]", "tags = [\"c\"]")]),
    ("the Pool's parameter `mode`: literal `slow` made `careful`",
     [("mode: \"fast\" | \"slow\" = \"fast\"", "mode: \"fast\" | \"careful\" = \"fast\"")]),
    ("the output of `review` made a `string`",
     [("= \"low\") -> @Outcome {", "= \"low\") -> string {"),
      ("  output outcome!\n", "  output outcome!.outcome\n")]),
]


def version(k, text):
    return text.replace("@", "v%02d_" % k)


def build():
    out = [HEADER]
    versions = [("version 0: the program as it is", BASE)]
    for what, changes in EDITS:
        text = BASE
        for change in changes:
            old, new = change[0], change[1]
            times = change[2] if len(change) > 2 else 1
            found = text.count(old)
            if found != times:
                sys.exit("generate.py: edit `%s`: `%s` occurs %d times, not %d"
                         % (what, old.strip()[:60], found, times))
            text = text.replace(old, new)
        versions.append((what, text))
    for k, (what, text) in enumerate(versions):
        out.append("\n// ==== version %d: %s\n" % (k, what if k else "the program as it is"))
        out.append(version(k, text))
    return "".join(out)


def main():
    path = pathlib.Path(__file__).with_name("agreement.jr2")
    text = build()
    if "--check" in sys.argv[1:]:
        if not path.exists() or path.read_text() != text:
            print("%s is not what generate.py writes: run python3 %s" % (path, __file__))
            return 1
        return 0
    path.write_text(text)
    print("wrote %s: %d versions" % (path, len(EDITS) + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
