# fake-step: maybe-fail
