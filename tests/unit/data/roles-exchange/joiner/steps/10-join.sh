# fake-step: joiner
