"""gpujob's benchmark harness: every figure is measured side by side with its floor in the same run."""
