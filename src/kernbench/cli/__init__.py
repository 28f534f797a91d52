"""The command line: one option table, the commands, console output. No measuring."""
