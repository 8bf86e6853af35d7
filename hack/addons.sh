#!/usr/bin/env bash
# The stack's cluster add-ons, so that pods reach Services by IP and by
# name, and claims get volumes: kube-proxy (a DaemonSet on the host's
# network, iptables mode), CoreDNS (a Deployment behind the kube-dns
# Service at CLUSTER_DNS_IP) and local-path-provisioner (a Deployment, and
# the default StorageClass). All are ordinary pods that nodelet runs, from
# the stack's registry.
#
#   hack/addons.sh PROFILE apply       write the manifests into
#                                      STATE/addons and apply them
#   hack/addons.sh PROFILE wait-dns    wait until CoreDNS answers for
#                                      kubernetes.default through kube-proxy
#
# Called by local-up.sh when the profile has ADDONS=true.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# == 2)) || {
	echo "usage: $0 PROFILE apply|wait-dns" >&2
	exit 2
}
profile_load "$1"

kubectl_admin() { "$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" "$@"; }

# forwarders prints the host's nameservers that a pod can reach: a
# loopback one (systemd-resolved's 127.0.0.53) would be the pod's own.
forwarders() {
	awk '$1 == "nameserver" { print $2 }' /etc/resolv.conf 2>/dev/null |
		grep -vE '^(127\.|::1$)' | tr '\n' ' ' || true
}

write_kube_proxy() {
	cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: nodelet-local:kube-proxy
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier
subjects:
- kind: ServiceAccount
  name: kube-proxy
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-proxy
  namespace: kube-system
data:
  # kube-proxy makes the Service rules, so it cannot reach the API server
  # through one: it goes to the API server's own address, with its
  # ServiceAccount's token.
  kubeconfig.conf: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: local
      cluster:
        server: $API_SERVER_URL
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    users:
    - name: kube-proxy
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    contexts:
    - name: local
      context:
        cluster: local
        user: kube-proxy
    current-context: local
  # Zero conntrack settings leave the host's as they are; localhost node
  # ports would need route_localnet on the host.
  config.conf: |
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    mode: iptables
    clusterCIDR: $CLUSTER_CIDR
    clientConnection:
      kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
    conntrack:
      maxPerCore: 0
      tcpEstablishedTimeout: 0s
      tcpCloseWaitTimeout: 0s
    iptables:
      localhostNodePorts: false
    metricsBindAddress: 127.0.0.1:$KUBE_PROXY_METRICS_PORT
    healthzBindAddress: 127.0.0.1:$KUBE_PROXY_HEALTH_PORT
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    k8s-app: kube-proxy
spec:
  selector:
    matchLabels:
      k8s-app: kube-proxy
  template:
    metadata:
      labels:
        k8s-app: kube-proxy
    spec:
      serviceAccountName: kube-proxy
      priorityClassName: system-node-critical
      hostNetwork: true
      # The stack's node alone: its other nodes, if any (a host node run by
      # a kubelet and its companion, hack/host-kubelet.sh), are on the same
      # machine, whose iptables one kube-proxy keeps.
      nodeSelector:
        kubernetes.io/hostname: $NODE_NAME
      tolerations:
      - operator: Exists
      containers:
      - name: kube-proxy
        image: $KUBE_PROXY_IMAGE
        command:
        - /usr/local/bin/kube-proxy
        - --config=/var/lib/kube-proxy/config.conf
        - --hostname-override=\$(NODE_NAME)
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        securityContext:
          privileged: true
        readinessProbe:
          httpGet:
            host: 127.0.0.1
            path: /healthz
            port: $KUBE_PROXY_HEALTH_PORT
          periodSeconds: 5
        volumeMounts:
        - name: kube-proxy
          mountPath: /var/lib/kube-proxy
        - name: xtables-lock
          mountPath: /run/xtables.lock
      volumes:
      - name: kube-proxy
        configMap:
          name: kube-proxy
      # iptables takes this lock; the CNI plugins on the host take it too.
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
EOF
}

write_coredns() {
	local forward=''
	[[ -z $(forwarders) ]] || forward="forward . $(forwarders)"
	cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: nodelet-local:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: nodelet-local:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: nodelet-local:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  # kubeadm's Corefile; names outside the cluster go to the host's
  # nameservers (none when the host has only a loopback one).
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        prometheus :9153
        $forward
        cache 30
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
spec:
  replicas: 1
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        effect: NoSchedule
      containers:
      - name: coredns
        image: $COREDNS_IMAGE
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        - {name: metrics, containerPort: 9153, protocol: TCP}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            add: [NET_BIND_SERVICE]
            drop: [ALL]
        livenessProbe:
          httpGet: {path: /health, port: 8080}
          initialDelaySeconds: 60
          periodSeconds: 10
          failureThreshold: 5
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 2
        volumeMounts:
        - name: config
          mountPath: /etc/coredns
          readOnly: true
      volumes:
      - name: config
        configMap:
          name: coredns
          items:
          - {key: Corefile, path: Corefile}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/name: CoreDNS
spec:
  selector:
    k8s-app: kube-dns
  clusterIP: $CLUSTER_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
  - {name: metrics, port: 9153, protocol: TCP}
EOF
}

# write_local_path_provisioner writes local-path-provisioner's manifests
# (as its project ships them, from the stack's registry), with the default
# StorageClass: a claim is given a folder under LOCAL_PATH_DIR on the node
# it is first used on, made and removed by a helper pod that nodelet runs.
write_local_path_provisioner() {
	cat <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: local-path-storage
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: local-path-provisioner
  namespace: local-path-storage
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: local-path-provisioner
  namespace: local-path-storage
rules:
# Its helper pods.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, patch, update, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: local-path-provisioner
  namespace: local-path-storage
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: local-path-provisioner
subjects:
- kind: ServiceAccount
  name: local-path-provisioner
  namespace: local-path-storage
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: nodelet-local:local-path-provisioner
rules:
- apiGroups: [""]
  resources: [nodes, persistentvolumeclaims, configmaps, pods, pods/log]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: nodelet-local:local-path-provisioner
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: nodelet-local:local-path-provisioner
subjects:
- kind: ServiceAccount
  name: local-path-provisioner
  namespace: local-path-storage
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local-path-config
  namespace: local-path-storage
data:
  config.json: |-
    {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$LOCAL_PATH_DIR"]}]}
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata:
      name: helper-pod
    spec:
      priorityClassName: system-node-critical
      tolerations:
      - key: node.kubernetes.io/disk-pressure
        operator: Exists
        effect: NoSchedule
      containers:
      - name: helper-pod
        image: $BUSYBOX_IMAGE
        imagePullPolicy: IfNotPresent
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: local-path-provisioner
  namespace: local-path-storage
spec:
  replicas: 1
  selector:
    matchLabels:
      app: local-path-provisioner
  template:
    metadata:
      labels:
        app: local-path-provisioner
    spec:
      serviceAccountName: local-path-provisioner
      priorityClassName: system-cluster-critical
      containers:
      - name: local-path-provisioner
        image: $LOCAL_PATH_PROVISIONER_IMAGE
        args: [start, --config, /etc/config/config.json]
        env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: CONFIG_MOUNT_PATH
          value: /etc/config/
        # Its helper pods run as it does.
        - name: SERVICE_ACCOUNT_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.serviceAccountName
        volumeMounts:
        - name: config
          mountPath: /etc/config/
      volumes:
      - name: config
        configMap:
          name: local-path-config
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
}

# enable_bridge_netfilter makes bridged pod traffic pass iptables, so that
# a reply from a Service's backend on the same bridge is translated back
# (without it, a pod reaching a Service whose backend is a pod on the same
# node gets the answer from the wrong address and drops it), and turns
# on IP forwarding, which routing to and from pods needs.
enable_bridge_netfilter() {
	if [[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]]; then
		modprobe br_netfilter 2>/dev/null ||
			die "bridged traffic cannot be filtered: no /proc/sys/net/bridge and modprobe br_netfilter failed"
	fi
	sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.ipv4.ip_forward=1
}

case "$2" in
apply)
	enable_bridge_netfilter
	mkdir -p "$ADDONS_DIR"
	write_kube_proxy >"$ADDONS_DIR/kube-proxy.yaml"
	write_coredns >"$ADDONS_DIR/coredns.yaml"
	write_local_path_provisioner >"$ADDONS_DIR/local-path-provisioner.yaml"
	log "Applying kube-proxy, CoreDNS (kube-dns at $CLUSTER_DNS_IP) and local-path-provisioner (default StorageClass local-path) from $ADDONS_DIR"
	kubectl_admin apply -f "$ADDONS_DIR/kube-proxy.yaml" -f "$ADDONS_DIR/coredns.yaml" \
		-f "$ADDONS_DIR/local-path-provisioner.yaml" >/dev/null
	;;
wait-dns)
	# From the host, the query to the kube-dns ClusterIP goes through
	# kube-proxy's rules to the CoreDNS pod.
	name=kubernetes.default.svc.$CLUSTER_DOMAIN
	deadline=$((SECONDS + 180))
	until answer=$(busybox nslookup "$name" "$CLUSTER_DNS_IP" 2>/dev/null) && grep -q "$SERVICE_IP" <<<"$answer"; do
		((SECONDS < deadline)) || die "CoreDNS did not answer for $name at $CLUSTER_DNS_IP within 180s"
		sleep 1
	done
	log "DNS answers: $name is $SERVICE_IP (CoreDNS at $CLUSTER_DNS_IP, through kube-proxy)"
	;;
*) die "unknown action '$2' (want apply or wait-dns)" ;;
esac
