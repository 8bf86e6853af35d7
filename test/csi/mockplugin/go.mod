module github.com/nodelet/nodelet/test/csi/mockplugin

go 1.25.0

require (
	github.com/container-storage-interface/spec v1.13.0
	github.com/kubernetes-csi/csi-test/v5 v5.6.0
	golang.org/x/sys v0.46.0
	google.golang.org/grpc v1.83.1
	google.golang.org/protobuf v1.36.12
	k8s.io/klog/v2 v2.140.0
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	go.uber.org/mock v0.6.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/text v0.38.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
)
