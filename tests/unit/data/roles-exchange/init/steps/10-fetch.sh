# fake-step: fetch
