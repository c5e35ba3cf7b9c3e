# helpers (the unit tests' fake transport never runs them)
