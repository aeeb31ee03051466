"""Prints the op_db sweep's coverage at the end of a run that ran it."""


def pytest_terminal_summary(terminalreporter):
    try:
        from test_opdb import REPORT
    except ImportError:
        return
    for text in REPORT:
        terminalreporter.write_line(text)
