"""What may be asked: a question is checked (empty, overlong, not text) before any work.

Apart from :mod:`.ask` so that a command that only forwards the question to a running service
checks it without loading the retrieval code.
"""

from __future__ import annotations

MAX_QUESTION_CHARS = 2000
"""Longer questions are refused: the model reads 256 word-pieces, about 1,000 characters."""


class InvalidQuestionError(ValueError):
    """The question cannot be asked; the message says why."""


class EmptyQuestionError(InvalidQuestionError):
    """The question is empty or only white space."""


class QuestionTooLongError(InvalidQuestionError):
    """The question is longer than :data:`MAX_QUESTION_CHARS` characters."""


class QuestionNotTextError(InvalidQuestionError):
    """The question holds a lone surrogate: a string no text encoding can write (bytes that
    were not UTF-8 on a command line, or a ``\\udXXX`` escape in JSON)."""


def check_question(question: str) -> str:
    """The question without surrounding white space; empty, overlong or non-text questions
    are errors (checked before any model is loaded)."""
    question = question.strip()
    if not question:
        raise EmptyQuestionError("the question is empty")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QuestionNotTextError(
            f"the question is not text: {question[exc.start]!r} at character {exc.start} is a "
            "lone surrogate (bytes that are not UTF-8?)") from exc
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionTooLongError(f"the question has {len(question)} characters; at most "
                                   f"{MAX_QUESTION_CHARS} are accepted")
    return question
