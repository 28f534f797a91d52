"""Pure statistics and verdicts: comparisons, baselines from git, golden values."""
