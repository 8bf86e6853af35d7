# What the stack's real kubelets share: the benchmark's reference node
# (hack/bench.sh) and the companion test's host node (hack/host-kubelet.sh).
# Source it after hack/lib.sh.

# write_kubelet_config FILE CRI_ENDPOINT CGROUPS_PER_QOS CGROUP_ROOT ADDRESS
# PORT HEALTH_PORT CLIENT_CA POD_LOG_DIR ROOT_DIR writes a kubelet's
# configuration: what these machines need (cgroup v1 with the cgroupfs
# driver, swap, no systemd) and what keeps the kubelet inside its profile
# (its ports, cgroup root, log and plugin folders), with the disk eviction
# thresholds off (the stack's node has a disk of its own, the others the
# host's). Everything else is the kubelet's default.
write_kubelet_config() {
	local file=$1 endpoint=$2 per_qos=$3 cgroup_root=$4 address=$5 port=$6 health_port=$7 client_ca=$8 pod_log_dir=$9 root_dir=${10}
	cat >"$file" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: $endpoint
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: $per_qos
cgroupRoot: $cgroup_root
enforceNodeAllocatable: []
localStorageCapacityIsolation: false
address: $address
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $health_port
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $client_ca
authorization:
  mode: AlwaysAllow
podLogsDir: $pod_log_dir
volumePluginDir: $root_dir/volume-plugins
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 100Mi
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
  imagefs.inodesFree: "0%"
EOC
}

# write_kubelet_conflist CONF_DIR NETWORK BRIDGE POD_CIDR gives a kubelet's
# runtime the network nodelet writes for its own node (bridge with
# host-local addresses, portmap, bandwidth): the kubelet needs one to call
# its node Ready, and the benchmark compares the two on the same.
write_kubelet_conflist() {
	local conf_dir=$1 network=$2 bridge=$3 pod_cidr=$4
	cat >"$conf_dir/10-$network.conflist" <<EOC
{
  "cniVersion": "1.0.0",
  "name": "$network",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$pod_cidr"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}}
  ]
}
EOC
}

# make_cgroup_root makes the kubelet's cgroupRoot in every hierarchy: with
# QoS cgroups, it refuses to start unless it exists. A new cpuset cgroup
# has no CPUs nor memory nodes, and takes no task until given its parent's.
make_cgroup_root() {
	local hierarchy parent dir part
	for hierarchy in /sys/fs/cgroup/*/; do
		parent=${hierarchy%/}
		for part in ${CGROUP_ROOT//\// }; do
			dir=$parent/$part
			mkdir -p "$dir"
			if [[ -f $dir/cpuset.cpus && -z $(<"$dir/cpuset.cpus") ]]; then
				cat "$parent/cpuset.cpus" >"$dir/cpuset.cpus"
				cat "$parent/cpuset.mems" >"$dir/cpuset.mems"
			fi
			parent=$dir
		done
	done
}
