# fake-step: gossip
