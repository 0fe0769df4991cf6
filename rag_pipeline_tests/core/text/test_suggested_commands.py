from rag_pipeline.core.text.suggested_commands import command_line, commands_in


def test_a_command_line_repeats_the_options_quoted_for_a_shell():
    assert command_line(("--config", "/teams/my team.toml"), "gold", "draft") == (
        "rag-pipeline --config '/teams/my team.toml' gold draft")
    assert command_line((), "status") == "rag-pipeline status"


def test_each_suggested_command_in_a_message_gets_the_options():
    message = "Run `rag-pipeline gold draft`, then `rag-pipeline eval`; rag-pipeline alone stays."
    assert commands_in(message, ("--data-dir", "d")) == (
        "Run `rag-pipeline --data-dir d gold draft`, then `rag-pipeline --data-dir d eval`; "
        "rag-pipeline alone stays.")
    assert commands_in(message, ()) == message
