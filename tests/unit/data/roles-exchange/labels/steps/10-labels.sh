# fake-step: labels
