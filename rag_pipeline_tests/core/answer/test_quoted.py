"""Tests for ``rag_pipeline.core.answer.quoted``: sentence spans, the choice, and the exact slices."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.answer.quoted import (
    MAX_SENTENCE_CHARS,
    QuotedSentence,
    QuoteSettings,
    QuoteTables,
    check_quoted,
    choose_sentences,
    question_labels,
    quoted_answer,
    sentence_spans,
    term_share,
)
from rag_pipeline.core.text.analyzers import Analyzer


def test_sentences_keep_their_offsets_and_short_pieces_join_the_next():
    text = "  First sentence is here. Second one follows! x = 1.\n\nA new paragraph starts here.\n"
    spans = sentence_spans(text)
    assert spans == [(2, 25), (26, 52), (54, 82)]
    assert [text[a:b] for a, b in spans] == [
        "First sentence is here.", "Second one follows! x = 1.", "A new paragraph starts here."]


def test_a_short_last_piece_joins_the_previous_sentence():
    text = "The loop variable keeps its value. Yes."
    assert sentence_spans(text) == [(0, 39)]


def test_a_long_piece_without_full_stops_is_cut_at_line_ends():
    rows = "\n".join(f"row {i:02d}: alpha beta gamma delta epsilon zeta" for i in range(20))
    spans = sentence_spans(rows)
    # 43 characters a line: nine lines (9 * 44 - 1 = 395) fit under 400, ten (439) do not.
    assert [(b - a) for a, b in spans] == [395, 395, 87]
    assert all(b - a <= MAX_SENTENCE_CHARS for a, b in spans)
    assert rows[spans[1][0]:spans[1][1]].startswith("row 09:")


def test_each_table_row_is_a_sentence_and_the_prose_around_them_is_split_as_before():
    # Found by a user: the rows of a chunk were one piece cut at 400 characters, so the answer
    # quoted two rows at a chunk's end, not the row that answers. Rows are the document's own
    # (its tables, its row anchors), not lines that look like rows: prose piping `cat | wc` is
    # prose (found by a review).
    text = ("Headcount by team. Updated weekly.\n| Team | Headcount |\n| --- | --- |\n"
            "| Dept 22 | 66 |\n| Dept 25 | 75 |\nTo count them run cat\n*.log | wc -l in the "
            "folder. See HR.")
    rows = [(text.index(r), text.index(r) + len(r)) for r in ("| Dept 22 | 66 |", "| Dept 25 | 75 |")]
    assert [text[a:b] for a, b in sentence_spans(text, rows)] == [
        "Headcount by team. Updated weekly.", "| Team | Headcount |\n| --- | --- |",
        "| Dept 22 | 66 |", "| Dept 25 | 75 |",
        "To count them run cat\n*.log | wc -l in the folder. See HR."]


def test_the_row_that_holds_the_question_terms_is_quoted_and_a_heading_never_is():
    rows = "Security audit report\n" + "".join(
        f"Department: Dept {n} | Headcount: {n * 3}\n" for n in range(20, 32))
    citation = Citation(1, "hc.xlsx", "Security audit report", "Security audit report",
                        "#sheet=Q1", 0, len(rows), rows, 0.3, "file:///hc.xlsx")
    spans = [(22 + 36 * i, 22 + 36 * i + 35) for i in range(12)]

    def same(texts: list[str]) -> np.ndarray:  # every sentence as close: the terms decide
        return np.ones((len(texts), 4), np.float32) / 2

    quoted = quoted_answer("what is the headcount of dept 25", np.ones(4, np.float32) / 2,
                           [citation], [""], same, QuoteSettings(max_sentences=1),
                           [QuoteTables(spans)])
    assert [(q.text, q.start) for q in quoted] == [("Department: Dept 25 | Headcount: 75", 202)]
    assert rows[202:237] == quoted[0].text
    title = quoted_answer("security audit report", np.ones(4, np.float32) / 2, [citation], [""],
                          same, QuoteSettings(max_sentences=3, margin=1.0), [QuoteTables(spans)])
    assert "Security audit report" not in [q.text for q in title]


def test_a_lettered_label_the_question_names_keeps_its_row_and_drops_the_other_letters():
    # Found by a new team: "Tier A" was answered with the Tier C row (it says "cities", the
    # letter A is a stopword, and the rows are as close to the question as each other).
    table = ("City tier | Per diem (EUR) | Hotel cap (EUR/night)\n"
             "Tier A (London, Zurich, New York) | 95 | 240\n"
             "Tier B (Berlin, Madrid, Toronto) | 70 | 160\n"
             "Tier C (all other cities) | 55 | 110\n"
             "Rates are reviewed each January by finance.")
    rows = [(table.index(f"Tier {t}"), table.index("\n", table.index(f"Tier {t}"))) for t in "ABC"]
    citation = Citation(1, "p.docx", "Policy", "Per diem", "#char=0,200", 0, len(table), table,
                        0.3, "")

    def closer_to_c(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "Tier C" in t else [0.8, 0.6] for t in texts], np.float32)

    def ask(question: str) -> list[str]:
        return [q.text for q in quoted_answer(
            question, np.array([1.0, 0.0], np.float32), [citation], [""], closer_to_c,
            QuoteSettings(margin=1.0), [QuoteTables(rows, [(0, table.index("\n"))])])]

    assert ask("What is the per diem for Tier A cities?") == [
        "Tier A (London, Zurich, New York) | 95 | 240",
        "Rates are reviewed each January by finance."]
    both = ["Tier A (London, Zurich, New York) | 95 | 240",
            "Tier B (Berlin, Madrid, Toronto) | 70 | 160",
            "Rates are reviewed each January by finance."]
    # Found by a review: the letters after one word, joined, are all named.
    assert ask("Compare Tier A and Tier B per diem rates") == both
    assert ask("Compare Tier A and B per diem rates") == both
    assert ask("What are the Tier A/B hotel caps?") == both
    # No label named (the pronoun I, a lower-case article): the closest row, as before.
    assert ask("Can I claim the per diem in a tier city?")[0] == "Tier C (all other cities) | 55 | 110"
    # A label no sentence names drops nothing.
    assert ask("What is the per diem for Tier D cities?")[0] == "Tier C (all other cities) | 55 | 110"


def test_question_labels_are_a_word_and_capital_letters_or_numbers():
    assert question_labels("Is Plan B cheaper than Tier A's or Tier-C rates?") == {
        "plan": {"B"}, "tier": {"A"}}
    assert question_labels("Can I get the list of the Team X, Team Y leads?") == {
        "team": {"X", "Y"}}
    assert question_labels("Tier A, B or C and Bob?") == {"tier": {"A", "B", "C"}}
    # Found by a new team: numbered and lower-case labels were not labels.
    assert question_labels("What does phase 2 deliver, and is version 2 or 3 out?") == {
        "phase": {"2"}, "version": {"2", "3"}}
    assert question_labels("how many transit days for zone f?") == {"zone": {"F"}}
    # Not labels: an article, a version's number, a stopword's number.
    assert question_labels("How do I plan a trip in 30 days with Python 3.12?") == {}


def test_a_table_rows_terms_count_with_its_header_row():
    # Found by a new team: "the deductible for Plan B" quoted the prose sentence naming the
    # deductible, not the row holding it: the word is in the header row, not in the row.
    prose = "Plan B balances premium and deductible and suits most families."
    row = "| Plan B | $120 | $1,500 | $5,000 |"
    header = "| Plan | Monthly premium | Annual deductible | Out-of-pocket maximum |"
    cited = [Citation(1, "b.md", "Benefits", "Choosing", "#char=0,64", 0, len(prose), prose, 0.3,
                      ""),
             Citation(2, "b.md", "Benefits", "Plans", "#char=100,135", 100, 100 + len(row), row,
                      0.3, "", table_header=header)]

    def same(texts: list[str]) -> np.ndarray:  # every sentence as close: the terms decide
        return np.ones((len(texts), 4), np.float32) / 2

    quoted = quoted_answer("What is the deductible for Plan B?", np.ones(4, np.float32) / 2, cited,
                           ["", ""], same, QuoteSettings(margin=0.05),
                           [QuoteTables(), QuoteTables(((0, len(row)),))])
    assert [(q.text, q.citation) for q in quoted] == [(prose, 1), (row, 2)]
    # The row is shown with its columns (found by a team lead: "| gw-us-03 | us-east | 32 |"
    # alone did not say 32 is its cores).
    assert [q.columns for q in quoted] == ["", header]
    assert quoted[1].to_json()["columns"] == header


def test_a_numbered_label_keeps_its_own_sentences():
    milestones = ("Phase 1 delivers a site survey of both warehouses. Phase 2 delivers a pilot on "
                  "one picking line. Phase 3 delivers the full rollout to every line.")
    citation = Citation(1, "m.md", "M", "M", "#char=0,200", 0, len(milestones), milestones, 0.3, "")
    quoted = quoted_answer("What does phase 2 deliver?", _embed(["x"])[0], [citation], [""],
                           _embed, QuoteSettings(margin=2.0))
    assert [q.text for q in quoted] == ["Phase 2 delivers a pilot on one picking line."]


def test_an_item_of_a_list_under_a_section_named_by_the_label_names_its_mark():
    # Found by a new user: "What does exit status 3 of kestrelctl mean?" quoted the items of
    # statuses 2, 0 and 4 of a man page's EXIT STATUS list, never "3 The rollback ...".
    items = ("0 The command succeeded.\n\n2 The arguments were wrong.\n\n3 The rollback itself "
             "failed; page the service owner.\n\n4 The Kestrel API could not be reached.\n")
    citation = Citation(1, "kestrelctl.1", "kestrelctl", "EXIT STATUS", "#char=0,200", 0,
                        len(items), items, 0.4, "", section="EXIT STATUS")

    def same(texts: list[str]) -> np.ndarray:  # every item as close: the label decides
        return np.ones((len(texts), 4), np.float32) / 2

    def ask(question: str, section: str = "EXIT STATUS") -> list[str]:
        cited = replace(citation, section=section)
        return [q.text for q in quoted_answer(question, np.ones(4, np.float32) / 2, [cited], [""],
                                              same, QuoteSettings(margin=2.0, term_weight=0.0))]

    assert ask("What does exit status 3 of kestrelctl mean?") == [
        "3 The rollback itself failed; page the service owner."]
    # Under a section not named by the word, a leading number names nothing.
    assert len(ask("What does exit status 3 of kestrelctl mean?", "DIAGNOSTICS")) == 3


def test_prose_is_counted_with_its_sections_title():
    # Found by a new user: "What was the root cause of INC-4302?" quoted the timeline's row
    # "09:41 | Cause identified by Tomas Ibarra", not the sentence under "Root cause".
    prose = "The certificate was issued by hand, so nothing renewed it."
    row = "09:41 | Cause identified by Tomas Ibarra"
    cited = [Citation(1, "pm.odt", "Postmortem", "Root cause", "#char=0,60", 0, len(prose), prose,
                      0.5, "", section="Root cause"),
             Citation(2, "pm.odt", "Postmortem", "Timeline", "#char=80,120", 80, 80 + len(row),
                      row, 0.5, "", table_header="Time (UTC) | Event", section="Timeline")]

    def same(texts: list[str]) -> np.ndarray:  # every sentence as close: the terms decide
        return np.ones((len(texts), 4), np.float32) / 2

    quoted = quoted_answer("What was the root cause of the outage?", np.ones(4, np.float32) / 2,
                           cited, ["", ""], same, QuoteSettings(max_sentences=1),
                           [QuoteTables(), QuoteTables(((0, len(row)),))])
    assert [q.text for q in quoted] == [prose]


def test_a_named_code_keeps_the_sentences_of_its_own_paragraph_or_row():
    # Found by an engineering team: one chunk of a plain-text incident log holds two incidents;
    # "Incident commander: Luis Moreno." (the next incident's) was quoted first.
    log = ("INC-2026-038  2026-01-22  SEV1  ledger-service\n"
           "  Failover to ledger-db-02 was performed manually. Incident commander: Aiko Tanaka.\n"
           "\n"
           "INC-2026-044  2026-02-03  SEV2  notification-worker\n"
           "  Root cause: a poison message. Incident commander: Luis Moreno.\n")
    citation = Citation(1, "log.txt", "log", "log", "#char=0,200", 0, len(log), log, 0.6, "")

    def closer_to_luis(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "Luis" in t else [0.9, 0.436] if "commander" in t
                         else [0.5, 0.866] for t in texts], np.float32)

    def ask(question: str) -> list[str]:
        return [q.text for q in quoted_answer(
            question, np.array([1.0, 0.0], np.float32), [citation], [""], closer_to_luis,
            QuoteSettings(margin=0.0, in_context=False))]

    assert ask("Who was the incident commander for INC-2026-038?") == [
        "Incident commander: Aiko Tanaka."]
    assert ask("Who was the incident commander for INC-2026-044?") == [
        "Incident commander: Luis Moreno."]
    # Two codes named (found by a review: each dropped the other's paragraph as a look-alike).
    both = [q.text for q in quoted_answer(
        "Who were the commanders for INC-2026-038 and INC-2026-044?", np.array([1.0, 0.0], np.float32),
        [citation], [""], closer_to_luis, QuoteSettings(margin=0.2, in_context=False))]
    assert both == ["Incident commander: Luis Moreno.", "Incident commander: Aiko Tanaka."]
    # Windows line ends part paragraphs too.
    crlf = Citation(1, "log.txt", "log", "log", "#char=0,200", 0, len(log), log.replace("\n", "\r\n"),
                    0.6, "")
    assert [q.text for q in quoted_answer(
        "Who was the incident commander for INC-2026-038?", np.array([1.0, 0.0], np.float32),
        [crlf], [""], closer_to_luis, QuoteSettings(margin=0.0, in_context=False))] == [
            "Incident commander: Aiko Tanaka."]
    # A code no paragraph holds drops nothing: the closest sentence, as before.
    assert ask("Who was the incident commander for INC-2026-099?") == [
        "Incident commander: Luis Moreno."]
    # Rows of one table: the row holding the code, not its look-alike's.
    table = "Code | Location | Capacity\nWH-0452 | Brno Zone D | 3,500\nWH-0453 | Ghent | 1,750"
    rows = [(table.index("WH-0452"), table.index("\nWH-0453")), (table.index("WH-0453"), len(table))]
    register = Citation(1, "r.pdf", "R", "R", "#page=2", 0, len(table), table, 0.4, "")

    def closer_to_ghent(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "Ghent" in t else [0.8, 0.6] for t in texts], np.float32)

    quoted = quoted_answer("What is the capacity of WH-0452?", np.array([1.0, 0.0], np.float32),
                           [register], [""], closer_to_ghent, QuoteSettings(margin=0.0),
                           [QuoteTables(rows, [(0, table.index("\n"))])])
    assert [q.text for q in quoted] == ["WH-0452 | Brno Zone D | 3,500"]


def test_a_named_variable_keeps_its_own_sections_sentences_and_a_named_option_its_paragraph():
    # Found by a new user with bash's and tar's manuals: "What default value does bash set for
    # HISTSIZE?" quoted HISTFILESIZE's "... to the value of HISTSIZE ..." first, and "What does
    # the tar option --one-file-system do?" the exit code of --create first.
    histfilesize = ("The maximum number of lines contained in the history file. The shell sets "
                    "the default value to the value of HISTSIZE after reading any startup files.")
    histsize = ("The number of commands to remember in the command history. The shell sets the "
                "default value to 500 after reading any startup files.")
    shell = "Bash is an sh-compatible command language interpreter, as POSIX describes it."
    sections = [("HISTFILESIZE", histfilesize), ("HISTSIZE", histsize), ("DESCRIPTION", shell)]
    cited = [Citation(i, "bash.pdf", "bash", title, "#page=20", 0, len(text), text, 0.4, "",
                      section=title) for i, (title, text) in enumerate(sections, start=1)]

    def closer_to_histsize_named(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "value of HISTSIZE" in t else [0.9, 0.436] for t in texts],
                        np.float32)

    def ask(question: str, citations: list[Citation]) -> list[str]:
        return [q.text for q in quoted_answer(
            question, np.array([1.0, 0.0], np.float32), citations, [""] * len(citations),
            closer_to_histsize_named, QuoteSettings(max_sentences=1, in_context=False))]

    assert ask("What default value does bash set for HISTSIZE?", cited) == [
        "The shell sets the default value to 500 after reading any startup files."]
    # No cited section titled by the name: the sentences are scored as before, and a name in
    # capitals in prose (POSIX) drops nothing.
    assert ask("What default value does bash set for HISTSIZE?", [cited[0], cited[2]]) == [
        "The shell sets the default value to the value of HISTSIZE after reading any startup files."]
    assert ask("Which standard does bash follow, POSIX?", cited) == [
        "The shell sets the default value to the value of HISTSIZE after reading any startup files."]
    options = ("--one-file-system\n  Stay in local file system when creating archive.\n\n"
               "--recursion\n  Recurse into directories (default).")
    status = ("If tar was given one of the --create, --append or --update options, this exit "
              "code means that some files were changed while being archived.")
    local = Citation(1, "tar.1", "tar", "Local file selection", "#char=0,90", 0, len(options),
                     options, 0.4, "", section="Local file selection")
    exit_code = Citation(2, "tar.1", "tar", "RETURN VALUE", "#char=900,1000", 900, 900 + len(status),
                         status, 0.4, "", section="RETURN VALUE")

    def closer_to_the_exit_code(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "exit code" in t else [0.8, 0.6] for t in texts], np.float32)

    quoted = quoted_answer("What does the tar option --one-file-system do?",
                           np.array([1.0, 0.0], np.float32), [local, exit_code], ["", ""],
                           closer_to_the_exit_code, QuoteSettings(margin=0.0, in_context=False))
    assert [q.text for q in quoted] == [
        "--one-file-system\n  Stay in local file system when creating archive."]


def test_a_manuals_option_entry_is_about_the_options_of_its_first_line():
    # Found by a new user with reference manuals: "What does make -k do?" quoted the -S entry
    # first, "Cancel the effect of the -k option.", though -k's own entry was cited.
    options = ("-S, --no-keep-going, --stop\n       Cancel the effect of the -k option.\n\n"
               "-k, --keep-going\n       Continue as much as possible after an error.")
    cited = Citation(1, "make.1", "make", "OPTIONS", "#char=0,150", 0, len(options), options,
                     0.4, "", section="OPTIONS")

    def closer_to_the_stop(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "Cancel" in t else [0.8, 0.6] for t in texts], np.float32)

    def ask(question: str) -> list[str]:
        return [q.text for q in quoted_answer(
            question, np.array([1.0, 0.0], np.float32), [cited], [""], closer_to_the_stop,
            QuoteSettings(margin=0.0, in_context=False))]

    assert ask("What does make -k do?") == [
        "-k, --keep-going\n       Continue as much as possible after an error."]
    assert ask("What does make --stop do?") == [
        "-S, --no-keep-going, --stop\n       Cancel the effect of the -k option."]


def test_a_named_date_keeps_the_rows_holding_it_and_drops_the_other_dates_rows():
    """Found by a new team: asked for the on-call of the week starting 2026-03-02, the quoted
    answer put the rows of 2026-03-23 and 2026-02-09 before the week's own."""
    table = ("Week | Primary | Secondary\n2026-02-09 | Aiko Tanaka | Ben Ode\n"
             "2026-03-02 | Cara Diaz | Aiko Tanaka\n2026-03-23 | Ben Ode | Cara Diaz")
    starts = [table.index(week) for week in ("2026-02-09", "2026-03-02", "2026-03-23")]
    rows = [(start, table.find("\n", start) if table.find("\n", start) > 0 else len(table))
            for start in starts]
    rota = Citation(1, "rota.xlsx", "Rota", "Rota", "#sheet=Rota", 0, len(table), table, 0.5, "")

    def other_weeks_closer(texts: list[str]) -> np.ndarray:
        return np.array([[0.8, 0.6] if "2026-03-02" in t else [1.0, 0.0] for t in texts], np.float32)

    def ask(question: str) -> list[str]:
        return [q.text for q in quoted_answer(
            question, np.array([1.0, 0.0], np.float32), [rota], [""], other_weeks_closer,
            QuoteSettings(margin=0.5), [QuoteTables(rows, [(0, table.index("\n"))])])]

    assert ask("Who is the primary on-call for the week starting 2026-03-02?") == [
        "2026-03-02 | Cara Diaz | Aiko Tanaka"]
    # A date no row holds drops nothing.
    assert len(ask("Who is the primary on-call for the week starting 2026-04-06?")) == 3


def test_a_mails_header_block_and_quoted_reply_are_never_quoted():
    """Found by a new user: asked for a launch date, the quoted answer led with the message's
    From/To/Date block; asked for a cause, it quoted the earlier message's question."""
    from rag_pipeline.core.ingest.formats.mail import EmlFormat

    mail = ("From: Jonas Berg <jonas@example.org>\nTo: dev@example.org\n"
            "Date: Tue, 14 Oct 2026 09:00:00 +0200\n\nThe root cause was an expired certificate.\n\n"
            "Jonas\n\n> On 13 Oct, Petra wrote:\n> Does anyone know why the database went down?")
    not_answers = EmlFormat().not_answers(mail)
    assert [mail[s:e] for s, e in not_answers] == [
        "From: Jonas Berg <jonas@example.org>\nTo: dev@example.org\nDate: Tue, 14 Oct 2026 09:00:00 +0200\n",
        "> On 13 Oct, Petra wrote:\n> Does anyone know why the database went down?"]
    cited = Citation(1, "re.eml", "Re: outage", "Re: outage", "#char=0,10", 0, len(mail), mail, 0.5, "")

    def everything_alike(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0]] * len(texts), np.float32)

    quoted = quoted_answer("Why did the database go down on 13 Oct?", np.array([1.0, 0.0], np.float32),
                           [cited], [""], everything_alike, QuoteSettings(margin=1.0),
                           [QuoteTables(not_answers=not_answers)])
    assert [q.text for q in quoted] == ["The root cause was an expired certificate.\n\nJonas"]
    assert EmlFormat().not_answers("Date: 2026-03-02 is when we ship.") == []  # no From: a body line


def test_a_sentence_names_a_label_with_a_capital_letter_only():
    # Found by a review: "plan a move" was read as Plan A, and its sentence dropped.
    policy = ("Plan B covers dental care for every employee. Employees who plan a move abroad "
              "keep their dental cover for a year. Plan C covers no dental care.")
    citation = Citation(1, "p.md", "P", "P", "#char=0,200", 0, len(policy), policy, 0.3, "")
    quoted = quoted_answer("Does Plan B cover dental care abroad?", _embed(["x"])[0], [citation],
                           [""], _embed, QuoteSettings(margin=2.0))
    assert sorted(q.text for q in quoted) == [
        "Employees who plan a move abroad keep their dental cover for a year.",
        "Plan B covers dental care for every employee."]


def test_a_header_row_is_no_sentence_a_long_row_is_prose_and_a_title_joins_nothing():
    # Found by users and a review: a slide's table header was quoted as an answer; a web page
    # laid out in a table cell was one 1,130-character "row"; a short title line was glued to
    # the sentence after it.
    long_cell = " ".join(f"Sentence number {i} of the cell says something." for i in range(12))
    text = ("# Rollback checklist\n\nIf the migration fails, restore the snapshot.\n"
            "Engine | Site | Thrust\nZephyrus | Esrange | 977\n" + long_cell)
    header = (text.index("Engine"), text.index("Engine") + len("Engine | Site | Thrust"))
    row = (text.index("Zephyrus"), text.index("Zephyrus") + len("Zephyrus | Esrange | 977"))
    long_row = (text.index("Sentence number 0"), len(text))
    spans = sentence_spans(text, [row, long_row], [header], {"Rollback checklist"})
    assert [text[a:b] for a, b in spans][:3] == [
        "If the migration fails, restore the snapshot.", "Zephyrus | Esrange | 977",
        "Sentence number 0 of the cell says something."]
    assert len(spans) == 2 + 12 and all(b - a <= MAX_SENTENCE_CHARS for a, b in spans)


def test_the_best_sentence_and_those_within_the_margin_are_chosen():
    settings = QuoteSettings(max_sentences=3, margin=0.05)
    assert choose_sentences([0.50, 0.80, 0.77, 0.60, 0.76], settings) == [1, 2, 4]
    assert choose_sentences([0.50, 0.80, 0.70], settings) == [1]
    assert choose_sentences([0.8, 0.8], QuoteSettings(max_sentences=1)) == [0]
    assert choose_sentences([], settings) == []
    # The same words (spaces aside) are said once; the next sentence within the margin takes
    # their place.
    assert choose_sentences([0.80, 0.79, 0.78, 0.77], settings, ["a b.", "a  b.", "c.", "a\nb."]) == [0, 2]


def test_settings_outside_their_range_are_refused():
    with pytest.raises(ValueError, match="max_sentences must be 1 to 3, got 4"):
        QuoteSettings(max_sentences=4)
    with pytest.raises(ValueError, match="must not be negative"):
        QuoteSettings(margin=-0.1)


def test_the_term_share_counts_distinct_question_terms():
    terms = {"loop", "variabl", "break"}
    assert term_share(terms, "The loop variable keeps its value.", Analyzer.ENGLISH) == 2 / 3
    assert term_share(set(), "anything", Analyzer.ENGLISH) == 0.0


# Two documents; the second citation's quote starts at offset 100 of its document.
DOC_A = "Intro line that says nothing much. The loop variable keeps its last value after break."
DOC_B = "x" * 100 + "Timeouts are seventeen seconds. Retries happen three times over."
CITATIONS = [
    Citation(1, "a.md", "A", "A", "#char=0,86", 0, 86, DOC_A, 0.3, "file:///a.md"),
    Citation(2, "b.md", "B", "B", "#char=100,164", 100, 164, DOC_B[100:], 0.4, "file:///b.md"),
]
AXES = ("loop", "timeout", "retries", "intro")


def _embed(texts: list[str]) -> np.ndarray:
    """One axis per keyword, unit length: a sentence is close to the words it holds."""
    rows = np.array([[1.0 if word in t.lower() else 0.0 for word in AXES] + [0.1] for t in texts],
                    np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_quoted_answer_is_exact_slices_of_the_sources_best_first():
    query = _embed(["loop"])[0]
    quoted = quoted_answer("what happens to the loop variable", query, CITATIONS, ["", ""], _embed,
                           QuoteSettings(term_weight=0.0, margin=0.0))
    assert quoted == [QuotedSentence(
        "The loop variable keeps its last value after break.", 1, 35, 86)]
    assert DOC_A[35:86] == quoted[0].text
    check_quoted(quoted, CITATIONS, {"a.md": DOC_A, "b.md": DOC_B})


def test_offsets_are_those_of_the_document_not_of_the_quote():
    query = _embed(["retries"])[0]
    quoted = quoted_answer("how many retries", query, CITATIONS, ["", ""], _embed,
                           QuoteSettings(term_weight=0.0, margin=0.0))
    assert quoted == [QuotedSentence("Retries happen three times over.", 2, 132, 164)]
    assert DOC_B[132:164] == quoted[0].text


def test_the_header_is_embedded_in_front_of_each_sentence():
    embedded: list[str] = []

    def recording(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return _embed(texts)

    quoted_answer("loop", _embed(["loop"])[0], CITATIONS[:1], ["Doc A > Loops\n"], recording)
    assert embedded == ["Doc A > Loops\nIntro line that says nothing much.",
                        "Doc A > Loops\nThe loop variable keeps its last value after break.",
                        "Doc A > Loops\nIntro line that says nothing much. The loop variable keeps "
                        "its last value after break."]


def test_a_sentence_is_scored_with_its_neighbours_and_a_table_row_alone():
    # Found by a new team over GNU sed's manual: "GNU sed does this by creating a temporary file"
    # answers "how does sed -i edit files in place" only with the sentence "this" points back to.
    quote = ("This option specifies that files are to be edited in-place. GNU sed does this by "
             "creating a temporary file. This option implies -s.\n\n"
             "Option | Meaning\n-n | quiet\n-s | separate")
    rows = [(quote.index("-n |"), quote.index("\n-s")), (quote.index("-s |"), len(quote))]
    citation = Citation(1, "sed.info", "sed", "sed", f"#char=0,{len(quote)}", 0, len(quote), quote,
                        0.3, "")
    embedded: list[str] = []

    def in_place(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return np.array([[1.0, 0.0] if "in-place" in t and "temporary" in t else
                         [0.6, 0.8] if "in-place" in t or "separate" in t else [0.0, 1.0]
                         for t in texts], np.float32)

    def ask(in_context: bool) -> list[str]:
        embedded.clear()
        return [q.text for q in quoted_answer(
            "how does sed edit files in place", np.array([1.0, 0.0], np.float32), [citation], [""],
            in_place, QuoteSettings(margin=0.0, term_weight=0.0, in_context=in_context),
            [QuoteTables(rows, [(quote.index("Option"), quote.index("\n-n"))])])]

    # The pair scores 1.0: both its sentences have its score (the sentence "this" points back
    # to as well); the rows are read alone (no third pair).
    assert ask(True) == ["This option specifies that files are to be edited in-place.",
                         "GNU sed does this by creating a temporary file."]
    assert embedded[5:] == [
        "This option specifies that files are to be edited in-place. GNU sed does this by "
        "creating a temporary file.",
        "GNU sed does this by creating a temporary file. This option implies -s."]
    # Alone, the sentence that answers scores 0.0, below a row that says "separate" (0.6).
    assert ask(False) == ["This option specifies that files are to be edited in-place.",
                          "-s | separate"]
    assert len(embedded) == 5


def test_of_two_sentences_sharing_their_pairs_score_the_one_closer_alone_leads():
    # Found by a second attack: a neighbour before the answer shares the pair's score and led
    # the answer only by coming first (3 answers of the gold set pushed out, 5 no longer first).
    quote = "The interpreter was rewritten in 2019. Integer literals may hold underscores."
    citation = Citation(1, "n.md", "N", "N", f"#char=0,{len(quote)}", 0, len(quote), quote, 0.3, "")

    def underscores(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if "rewritten" in t and "underscores" in t else
                         [0.8, 0.6] if "underscores" in t else [0.0, 1.0] for t in texts],
                        np.float32)

    quoted = quoted_answer("can integer literals hold underscores", np.array([1.0, 0.0], np.float32),
                           [citation], [""], underscores, QuoteSettings(margin=0.0, term_weight=0.0))
    assert [(q.text, q.score) for q in quoted] == [
        ("Integer literals may hold underscores.", 1.0),
        ("The interpreter was rewritten in 2019.", 1.0)]


def test_a_row_is_embedded_under_its_header_row_once():
    # Found by a user: "1st Qtr | 8.2", quoted under its table's header row, was embedded
    # without it (0.333 to the question) while the later rows' chunks carried it in their
    # context header (0.486): the three other quarters were the answer.
    quote = "Category | Sales\n1st Qtr | 8.2\n2nd Qtr | 3.2"
    rows = [(17, 30), (31, len(quote))]
    citation = Citation(1, "d.pptx", "Deck", "Slide 4", f"#char=0,{len(quote)}", 0, len(quote), quote,
                        0.3, "")
    embedded: list[str] = []

    def recording(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return _embed(texts)

    tables = [QuoteTables(rows, [(0, 16)])]
    quoted_answer("sales in the 1st quarter", _embed(["x"])[0], [citation], ["[Deck > Slide 4]\n"],
                  recording, tables=tables)
    assert embedded == ["[Deck > Slide 4]\nCategory | Sales\n1st Qtr | 8.2",
                        "[Deck > Slide 4]\nCategory | Sales\n2nd Qtr | 3.2"]
    embedded.clear()
    quoted_answer("sales in the 1st quarter", _embed(["x"])[0], [citation],
                  ["[Deck > Slide 4]\nCategory | Sales\n"], recording, tables=tables)
    assert embedded == ["[Deck > Slide 4]\nCategory | Sales\n1st Qtr | 8.2",
                        "[Deck > Slide 4]\nCategory | Sales\n2nd Qtr | 3.2"]


def test_a_question_in_a_source_is_never_quoted_as_its_answer():
    # A mail thread: the reply quotes the question, whose words are the asker's own.
    thread = ("> Which gateway should the Lisbon office use? Use the new one: the VPN gateway for "
              "the Lisbon office is vpn-lis-02. Which gateway is retired (\"the old one?\")")
    citation = Citation(1, "t.eml", "T", "T", "#char=0,160", 0, len(thread), thread, 0.3, "")
    quoted = quoted_answer("Which gateway should the Lisbon office use?", _embed(["x"])[0],
                           [citation], [""], _embed, QuoteSettings(margin=1.0))
    assert [q.text for q in quoted] == [
        "Use the new one: the VPN gateway for the Lisbon office is vpn-lis-02."]


def test_a_numbered_question_is_a_question():
    # Found by a new team: grep's FAQ item "8. Why does grep report "Binary file matches"?" was
    # quoted as an answer: its "8." read as a sentence before the question.
    from rag_pipeline.core.answer.quoted import asks

    assert [asks(t) for t in ("8. Why does grep report \u201cBinary file matches\u201d?",
                              "b) Which one?", "12) Why not?", "Version 8. Why?",
                              "It ends at 8. Does it?", "8. Use -c.")] == [
        True, True, True, False, False, False]


def test_a_statement_with_a_short_question_joined_to_it_is_quoted():
    notice = "Tokens expire after 90 days unless renewed by an admin. Any questions?"
    citation = Citation(1, "n.md", "N", "N", "#char=0,71", 0, len(notice), notice, 0.3, "")
    quoted = quoted_answer("when do tokens expire", _embed(["x"])[0], [citation], [""], _embed)
    assert [q.text for q in quoted] == [notice]


def test_a_sentence_two_sources_share_is_quoted_once():
    # A paragraph in both the handbook and its copy elsewhere was quoted twice, word for word,
    # as the answer's first and second sentences.
    copy = "The loop variable keeps its last\nvalue after break. Retries happen three times over."
    cited = [CITATIONS[0], Citation(2, "c.md", "C", "C", f"#char=0,{len(copy)}", 0, len(copy), copy, 0.3, "")]
    quoted = quoted_answer("loop variable after break", _embed(["loop"])[0], cited, ["", ""], _embed,
                           QuoteSettings(term_weight=0.0, margin=1.0))
    assert [(q.citation, q.text) for q in quoted] == [
        (1, "The loop variable keeps its last value after break."),
        (1, "Intro line that says nothing much."), (2, "Retries happen three times over.")]


def test_another_sections_heading_inside_a_quote_is_never_its_answer():
    # Found by a new user over SQLite's limits page: "Maximum Number Of Columns", the next
    # section's heading inside the cited chunk, was quoted first as the answer to "what is the
    # maximum number of columns".
    from rag_pipeline.core.answer.quoted import heading_like

    quote = ("Rows are limited by the page size.\n\nMaximum Number Of Columns\n\n"
             "The default setting for the column limit is 2000 columns.")
    citation = Citation(1, "limits.html", "Limits", "Limits", f"#char=0,{len(quote)}", 0, len(quote),
                        quote, 0.3, "")
    quoted = quoted_answer("maximum number of columns", _embed(["x"])[0], [citation], [""], _embed,
                           QuoteSettings(margin=1.0))
    assert [q.text for q in quoted] == ["The default setting for the column limit is 2000 columns.",
                                        "Rows are limited by the page size."]
    assert [heading_like(p) for p in ("Maximum Number Of Columns", "Plan B Dental Care",
                                      "The number of columns in a table", "Run It Now.",
                                      "Overview", "2. BASIC SED")] == [True, True, False, False,
                                                                       False, False]


def test_a_refusal_quotes_nothing_and_embeds_nothing():
    def never(texts: list[str]) -> np.ndarray:
        raise AssertionError("nothing to embed")

    assert quoted_answer("anything", np.ones(5, np.float32), [], [], never) == []


def test_a_sentence_that_is_not_the_canonical_slice_is_caught():
    wrong = [QuotedSentence("The loop variable keeps its last value after break.", 1, 34, 85)]
    with pytest.raises(ValueError, match=r"quoted sentence \[1\] 34:85 is not the canonical text "
                                         r"of 'a.md'"):
        check_quoted(wrong, CITATIONS, {"a.md": DOC_A})
    with pytest.raises(ValueError, match=r"cites \[3\], which is no source"):
        check_quoted([QuotedSentence("x", 3, 0, 1)], CITATIONS, {"a.md": DOC_A})


def test_an_underlined_heading_is_never_quoted():
    # Found by a new user: an Info node's title over its line of stars was quoted as the answer.
    from rag_pipeline.core.answer.quoted import underlined

    assert [underlined(piece) for piece in (
        "artefact-tierd\n**************", "Install\n=======", "Notes\n-----\n",
        "a - b\nc", "Total\n**", "one line", "x = 1\n=====\nmore")] == [
        True, True, True, False, False, False, False]
    text = "artefact-tierd\n**************\n\nThe tier daemon moves artefacts to cold storage."
    citation = Citation(1, "ops.info", "ops", "Tier daemon", "#char=0,90", 0, len(text), text,
                        0.3, "")
    quoted = quoted_answer("what is artefact-tierd", _embed(["x"])[0], [citation], [""], _embed,
                           QuoteSettings(margin=2.0))
    assert [q.text for q in quoted] == ["The tier daemon moves artefacts to cold storage."]


def test_a_mails_attribution_line_and_signature_are_never_quoted():
    """Found by a support team: asked how long the Wi-Fi was down (said only in the quoted
    message), the quoted answer was "On Mon, 10 Mar 2025, Lars Øby wrote:"; another mail's
    was its signature joined to that line."""
    from rag_pipeline.core.ingest.formats.mail import EmlFormat

    mail = ("Hej alle,\n\nThe guest Wi-Fi is back after the firewall reboot.\n\nMvh,\n-- \n"
            "Ingrid Sørensen\nNetwork team\n\nOn Mon, 10 Mar 2025, Lars Øby wrote:\n\n"
            "> The guest Wi-Fi was down for 40 minutes.\n\nLe 9 mars, Ana a écrit :\n"
            "> Bonjour.\n")
    assert [mail[s:e] for s, e in EmlFormat().not_answers(mail)] == [
        "-- \nIngrid Sørensen\nNetwork team\n\nOn Mon, 10 Mar 2025, Lars Øby wrote:\n\n",
        "On Mon, 10 Mar 2025, Lars Øby wrote:\n\n",
        "> The guest Wi-Fi was down for 40 minutes.",
        "Le 9 mars, Ana a écrit :\n",
        "> Bonjour."]
    # A colon over a list or a code block is no attribution; "--" inside a line no signature.
    assert EmlFormat().not_answers("Steps:\n- one\n\nUse a -- b here.\n") == []
