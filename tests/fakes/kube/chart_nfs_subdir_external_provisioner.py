# Stand-in for what the NFS subdir external provisioner
# (registry.k8s.io/sig-storage/nfs-subdir-external-provisioner, the image
# of the chart nfs-subdir-external-provisioner; README of
# github.com/kubernetes-sigs/nfs-subdir-external-provisioner and its chart)
# does once it runs, acted out by the kubelet on the node its pod lands on.
# Copied:
#   - it serves the StorageClasses whose `provisioner` is its
#     PROVISIONER_NAME (the chart: cluster.local/RELEASE), calling the API
#     as its pod's service account (the chart's RBAC: ClusterRole
#     ...-runner);
#   - for each Pending claim of such a class it makes the folder
#     ${namespace}-${pvcName}-${pvName} in the export, mounted in its pod
#     at /persistentvolumes, and a PersistentVolume named pvc-<claim uid>
#     (nfs: NFS_SERVER, NFS_PATH/folder; the class's reclaimPolicy; the
#     claim's access modes and requested size; annotation
#     pv.kubernetes.io/provisioned-by; claimRef the claim), which the
#     controller manager's volume binder then binds to the claim;
#   - when such a volume is Released (its claim is gone) and the reclaim
#     policy is Delete, the folder is removed, or renamed
#     archived-<folder> when the class's archiveOnDelete is "true" (the
#     chart's default), and the volume deleted.
# Not copied: leader election, pathPattern and onDelete parameters, mount
# options, events.  The export is what the kubelet gives for the pod's nfs
# volume (kubelet.py, nfs_dir: test nodes cannot mount NFS).

PV_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


@image_act("sig-storage/nfs-subdir-external-provisioner")
def act_nfs_provisioner(kubelet, pod, c, argv, env, mounts, log):
    name = env.get("PROVISIONER_NAME")
    server, path = env.get("NFS_SERVER", ""), env.get("NFS_PATH", "")
    if not name or not server or not path:
        kubelet.container_log(log, "environment variable PROVISIONER_NAME, NFS_SERVER or NFS_PATH is not set", "stderr")
        raise ContainerFailed("NFS_SERVER not set")
    root = None
    for mpath, vol in mounts.items():
        if mpath.rstrip("/") == "/persistentvolumes" and vol[0] in ("nfs", "hostPath"):
            root = vol[1]
    if root is None:
        kubelet.container_log(log, "/persistentvolumes is not mounted", "stderr")
        raise ContainerFailed("/persistentvolumes is not mounted")
    kubelet.container_log(log, "Starting provisioner controller %s!" % name)

    def tick():
        cl = kubelet.client_as(pod)
        if cl is None:
            return
        classes = {sc["metadata"]["name"]: sc for sc in cl.get(R("storageclasses").path())["items"]
                   if sc.get("provisioner") == name}
        for p in cl.get(R("persistentvolumeclaims").path())["items"]:
            spec, md = p.get("spec") or {}, p["metadata"]
            cls = spec.get("storageClassName")
            if cls not in classes or (p.get("status") or {}).get("phase") == "Bound" or spec.get("volumeName"):
                continue
            pv = "pvc-" + md["uid"]
            folder = "%s-%s-%s" % (md["namespace"], md["name"], pv)
            os.makedirs(os.path.join(root, folder), exist_ok=True)
            os.chmod(os.path.join(root, folder), 0o777)
            size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            vol = {"apiVersion": "v1", "kind": "PersistentVolume",
                   "metadata": {"name": pv, "annotations": {PV_PROVISIONED_BY: name}},
                   "spec": {"capacity": {"storage": size}, "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                            "nfs": {"server": server, "path": os.path.join(path, folder)},
                            "persistentVolumeReclaimPolicy": classes[cls].get("reclaimPolicy", "Delete"),
                            "storageClassName": cls, "volumeMode": "Filesystem",
                            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": md["namespace"],
                                         "name": md["name"], "uid": md["uid"]}}}
            try:
                cl.post(R("persistentvolumes").path(), vol)
            except APIError as e:
                if e.code != 409:
                    raise
                continue
            kubelet.container_log(log, 'volume "%s" for claim "%s/%s" created' % (pv, md["namespace"], md["name"]))
        for v in cl.get(R("persistentvolumes").path())["items"]:
            md, spec = v["metadata"], v.get("spec") or {}
            if (md.get("annotations") or {}).get(PV_PROVISIONED_BY) != name:
                continue
            if (v.get("status") or {}).get("phase") != "Released" or spec.get("persistentVolumeReclaimPolicy") != "Delete":
                continue
            folder = os.path.basename(spec["nfs"]["path"])
            sc = classes.get(spec.get("storageClassName")) or {}
            src = os.path.join(root, folder)
            if os.path.isdir(src):
                if (sc.get("parameters") or {}).get("archiveOnDelete", "true") == "true":
                    os.rename(src, os.path.join(root, "archived-" + folder))
                else:
                    shutil.rmtree(src)
            cl.delete(R("persistentvolumes").path(None, md["name"]))
            kubelet.container_log(log, 'volume "%s" deleted' % md["name"])

    return tick
