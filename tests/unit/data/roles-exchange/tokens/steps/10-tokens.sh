# fake-step: tokens
