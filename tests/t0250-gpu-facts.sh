#!/bin/sh
# t0250: GPU nodes of seed lab B on the testbed (tests/fakes/nvidia): the
# fake nvidia-smi replays the recorded outputs, provision's facts report
# each node's GPU, the nvidia role passes on driven GPUs, and a node whose
# driver does not answer is the only one that fails, with its hint.
#
# Nodes (chroot): node-1 no GPU (control plane), node-2 GTX 1080 Ti (b-2),
# node-3 RTX 2080 Ti (b-3), node-4 RTX 3070 (b-4), node-5 a GTX 1080 Ti
# whose driver module is not loaded (the facts of
# tests/facts/gpu-smi-fails-after-kernel-update.facts).  The PCI devices
# come from gpu-node.sh's tmpfs over /sys/bus/pci/devices in each node's
# own mount namespace: provision reads sysfs as on a real machine.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-testbed.sh"

test_need_root
test_need_cmd python3 dpkg-deb nsenter timeout
GPU_NODE=$SRC_ROOT/tests/fakes/nvidia/gpu-node.sh
tb_up --chroot 5
INV=$TB_INV
PLAN="$PROVISION plan -i $INV --roles $SRC_ROOT/roles --phases prep --no-tui"

b2='NVIDIA GeForce GTX 1080 Ti, 11264 MiB, 535.154.05, GPU-3f2a9c1e-7d4b-2e8a-91c6-0b5d8e4f7a21'
b3='NVIDIA GeForce RTX 2080 Ti, 11264 MiB, 550.54.15, GPU-9b1c0d2e-3f4a-5b6c-7d8e-9f0a1b2c3d4e'
b4='NVIDIA GeForce RTX 3070, 8192 MiB, 550.107.02, GPU-5a6b7c8d-9e0f-1a2b-3c4d-5e6f7a8b9c0d'
# shellcheck disable=SC2034 # used in the test_case bodies
nodriver="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."

x() { "$TESTBED" exec "$TB" "$@"; }

test_case "gpu-node.sh: lab B's GPUs and a failing driver on four nodes, host /sys untouched" "
	host_pci=\$(ls /sys/bus/pci/devices | sort)
	'$GPU_NODE' '$TB' node-2 gtx1080ti --packages
	'$GPU_NODE' '$TB' node-3 rtx2080ti --packages
	'$GPU_NODE' '$TB' node-4 rtx3070 --packages
	'$GPU_NODE' '$TB' node-5 gtx1080ti --driver-not-loaded --packages
	'$GPU_NODE' '$TB' node-4 rtx3070
	expect_eq \"\$host_pci\" \"\$(ls /sys/bus/pci/devices | sort)\" 'host PCI devices'
	expect_eq 0 \"\$(grep -c provision-fake-pci /proc/self/mounts || true)\" 'fake PCI mounts on the host'
	expect_eq 1 \"\$(x node-4 grep -c provision-fake-pci /proc/1/mounts)\" 'fake PCI mounts on node-4 after a second run'
	expect_eq '0000:0a:00.0 0x10de 0x030000 0x1b06' \"\$(x node-2 sh -c 'cd /sys/bus/pci/devices && for d in *; do echo \$d \$(cat \$d/vendor \$d/class \$d/device); done')\" 'node-2 PCI'
	expect_status 2 x node-2 sh -c ': >/sys/bus/pci/devices/x'
	expect_status 1 x node-1 test -e /usr/bin/nvidia-smi
"

test_case "the fake nvidia-smi: table, -L, --query-gpu CSV, unknown option, driver not loaded" "
	x node-3 nvidia-smi >table.out
	expect_grep '^| NVIDIA-SMI 550.54.15  *Driver Version: 550.54.15  *CUDA Version: 12.4  *|\$' table.out
	expect_grep '^|   0  NVIDIA GeForce RTX 2080 Ti  *Off |   00000000:01:00.0 Off |  *N/A |\$' table.out
	expect_grep '|  *1MiB /  11264MiB |' table.out
	expect_eq 1 \"\$(awk '{ print length }' table.out | sed 1d | sort -u | wc -l)\" 'one table width'
	expect_eq 'GPU 0: NVIDIA GeForce GTX 1080 Ti (UUID: GPU-3f2a9c1e-7d4b-2e8a-91c6-0b5d8e4f7a21)' \"\$(x node-2 nvidia-smi -L)\"
	expect_eq 'index, name, memory.total [MiB], pci.bus_id, count
0, NVIDIA GeForce RTX 3070, 8192 MiB, 00000000:01:00.0, 1' \"\$(x node-4 nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id,count --format=csv)\"
	expect_eq '8192' \"\$(x node-4 nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits)\"
	expect_eq '$b2' \"\$(x node-2 nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv,noheader)\"
	expect_status 2 x node-2 nvidia-smi --bogus >opt.out
	expect_eq \"ERROR: Option --bogus is not recognized. Please run 'nvidia-smi -h'.\" \"\$(cat opt.out)\"
	expect_status 9 x node-5 nvidia-smi --query-gpu=name --format=csv,noheader >nodrv.out
	expect_eq \"\$nodriver\" \"\$(cat nodrv.out)\"
	expect_status 9 x node-5 nvidia-smi
"

test_case "plan --phases prep: each node's GPU in its facts; only node-5 fails, with its hint" "
	expect_status 1 timeout 120 $PLAN -o json -v >plan.json
	for n in 1 2 3 4 5; do
		grep \"^{\\\"event\\\":\\\"line\\\",\\\"node\\\":\\\"node-\$n\\\",\\\"phase\\\":\\\"facts\\\"\" plan.json |
			python3 -c 'import json, sys; [print(json.loads(l)[\"line\"]) for l in sys.stdin]' >facts-\$n
	done
	expect_no_grep '^nvidia_pci=\\|^gpu=\\|^nvidia_smi_rc=' facts-1
	expect_grep '^nvidia_pci=0000:0a:00.0 0x1b06\$' facts-2
	expect_grep '^nvidia_pci=0000:01:00.0 0x1e07\$' facts-3
	expect_grep '^nvidia_pci=0000:01:00.0 0x2484\$' facts-4
	expect_grep '^nvidia_pci=0000:0a:00.0 0x1b06\$' facts-5
	expect_eq 'gpu=$b2' \"\$(grep '^gpu=' facts-2)\" 'node-2 gpu'
	expect_eq 'gpu=$b3' \"\$(grep '^gpu=' facts-3)\" 'node-3 gpu'
	expect_eq 'gpu=$b4' \"\$(grep '^gpu=' facts-4)\" 'node-4 gpu'
	expect_grep '^cuda_version=12.2\$' facts-2
	expect_grep '^cuda_version=12.4\$' facts-3
	expect_grep '^package=nvidia-driver-550 550.107.02-0ubuntu1\$' facts-4
	expect_grep '^nvidia_smi_rc=9\$' facts-5
	expect_no_grep '^cuda_version=' facts-5
	python3 -c '
import json
ev = [json.loads(l) for l in open(\"plan.json\")]
state = {e[\"node\"]: e[\"state\"] for e in ev if e[\"event\"] == \"node\"}
print(\" \".join(\"%s=%s\" % kv for kv in sorted(state.items())))
for e in ev:
    if e[\"event\"] == \"step_end\" and e.get(\"role\") == \"nvidia\":
        print(e[\"node\"], e[\"step\"], e[\"result\"])
    if e[\"event\"] == \"message\" and e.get(\"result\") == \"failed\":
        print(e[\"node\"], e[\"phase\"], e[\"text\"])
' >result.out
	cat result.out
	expect_grep '^node-1=done node-2=done node-3=done node-4=done node-5=failed\$' result.out
	for n in 2 3 4; do
		expect_grep \"^node-\$n 10-driver unchanged\\\$\" result.out
		expect_grep \"^node-\$n 20-hold would change\\\$\" result.out
	done
	expect_no_grep '^node-[15] 10-driver' result.out
	expect_grep \"^node-5 preflight nvidia-smi fails (exit 9): \$nodriver (hint: \" result.out
	expect_eq 1 \"\$(grep -c ' preflight ' result.out)\" 'preflight failures'
	expect_grep '\"node\":\"node-3\",\"phase\":\"prep\",\"step\":\"10-driver\",\"stream\":\"stdout\",\"line\":\"driver 550.54.15 >= 525.60.13 (CUDA 12.x)\"' plan.json
"

test_case "the nvidia role's driver check on node-5 fails with the module hint (as provision calls it)" "
	expect_status 2 '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-5 nvidia 10-driver check >nv5.out 2>&1
	expect_grep \"^\$nodriver\" nv5.out
	expect_grep '^::hint the nvidia kernel module is not loaded' nv5.out
	expect_status 0 '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-2 nvidia 10-driver check >nv2.out 2>&1
	expect_grep '^1 GPU(s)\$' nv2.out
"

test_case "kubeadm-join 50-labels hands every GPU of a node with two models (lab A's a-2) for provision.dev/gpus" "
	'$GPU_NODE' '$TB' node-1 rtx4080-a2
	export PROVISION_GPUS=2; expect_status 0 '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-1 kubeadm-join 50-labels check >j1.out 2>&1
	cat j1.out
	expect_grep '^::set node_gpus_node_1=node-1 NVIDIA GeForce RTX 4080:16376,NVIDIA A2:15356\$' j1.out
	expect_grep '^::set node_labels_node_1=node-1 node-role.kubernetes.io/worker= provision.dev/gpu-count=2 provision.dev/gpu-model=NVIDIA-GeForce-RTX-4080\$' j1.out
	export PROVISION_GPUS=1; expect_status 0 '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-4 kubeadm-join 50-labels check >j4.out 2>&1
	expect_grep '^::set node_gpus_node_4=node-4 NVIDIA GeForce RTX 3070:8192\$' j4.out
	# A node whose driver does not answer hands none (the annotation goes).
	export PROVISION_GPUS=1; expect_status 0 '$SRC_ROOT/tests/roles/steps.sh' step '$TB' node-5 kubeadm-join 50-labels check >j5.out 2>&1
	expect_grep '^::set node_gpus_node_5=node-5 \$' j5.out
"

test_case "provision run -- nvidia-smi --query-gpu=name,memory.total prints the recorded lines" "
	expect_status 0 timeout 60 '$PROVISION' run -i '$INV' -l node-2,node-3,node-4 -- nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >run.out
	cat run.out
	for l in 'node-2.*NVIDIA GeForce GTX 1080 Ti, 11264 MiB\$' 'node-3.*NVIDIA GeForce RTX 2080 Ti, 11264 MiB\$' 'node-4.*NVIDIA GeForce RTX 3070, 8192 MiB\$'; do
		expect_grep \"\$l\" run.out
	done
	expect_status 1 timeout 60 '$PROVISION' run -i '$INV' -l node-5 -- nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >run5.out
	expect_grep \"node-5.*\$nodriver\" run5.out
"

test_done
