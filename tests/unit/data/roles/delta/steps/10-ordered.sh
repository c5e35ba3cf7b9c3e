# fake-step: ordered
