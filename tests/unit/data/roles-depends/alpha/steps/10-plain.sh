# fake-step: plain
