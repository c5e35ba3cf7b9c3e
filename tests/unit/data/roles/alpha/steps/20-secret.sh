# fake-step: secret
