package controllers

// The permissions of nodelet's own ServiceAccount, which the Helm chart and
// the kustomize manifests run the DaemonSet with: requesting the node's
// client certificate (--node-identity=csr) and reading the requests back,
// nothing else. CSRs hold public keys and certificates only; their names
// are generated, so RBAC cannot narrow the reads to nodelet's own.
//
// Everything else nodelet does, it does as its node
// (system:node:<node>-nodelet in system:nodes): the Node authorizer
// grants it what a kubelet gets — its Node and Lease, its pods and their
// status, the Secrets, ConfigMaps, PersistentVolumeClaims and service
// account tokens its pods use, events, Services, RuntimeClasses, token and
// access reviews, CSRs — and NodeRestriction confines its writes to its
// own Node and pods.
//
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=create;get;list;watch
