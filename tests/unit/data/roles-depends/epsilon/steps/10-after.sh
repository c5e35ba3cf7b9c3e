# fake-step: after
