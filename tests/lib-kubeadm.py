# tests/lib-kubeadm.py: what the tests of the kubeadm stand-in's HA code
# share (t0401-fakes.sh's pyfake kubeadm, t0404-kubeadm-etcd-members.sh's
# kpy), loaded after the stand-in's own functions (APIError).


class MemAPI:
    """the calls upload_certs and download_certs make, kept in memory"""

    def __init__(self):
        self.objs = {}

    def post(self, path, obj):
        obj = dict(obj, metadata=dict(obj["metadata"], uid="u-" + obj["metadata"]["name"]))
        self.objs[path + "/" + obj["metadata"]["name"]] = obj
        return obj

    def put(self, path, obj):
        self.objs[path] = obj
        return obj

    def get(self, path):
        if path not in self.objs:
            raise APIError(404, "not found")
        return self.objs[path]
