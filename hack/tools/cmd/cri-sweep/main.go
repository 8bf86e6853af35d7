// cri-sweep talks to a container runtime through CRI for the local stack's
// scripts: with -check it asks the runtime for its version and status (the
// scripts' readiness probe), otherwise it stops and removes every pod sandbox
// and container, so that the runtime runs CNI DEL for each pod and the
// addresses, veths and network namespaces go away before the runtime stops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "", "CRI endpoint, unix:///path/to/socket")
	check := flag.Bool("check", false, "only print the runtime's version and status; fail if it does not answer")
	timeout := flag.Duration("timeout", 2*time.Minute, "deadline for the whole run")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "cri-sweep: -endpoint is required")
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cri-sweep: connect to %s: %v\n", *endpoint, err)
		os.Exit(1)
	}
	defer conn.Close()
	client := runtimeapi.NewRuntimeServiceClient(conn)

	if *check {
		err = printStatus(ctx, client)
	} else {
		err = sweep(ctx, client)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cri-sweep: %v\n", err)
		os.Exit(1)
	}
}

func printStatus(ctx context.Context, client runtimeapi.RuntimeServiceClient) error {
	version, err := client.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return fmt.Errorf("version: %w", err)
	}
	fmt.Printf("runtime %s %s, CRI %s\n", version.RuntimeName, version.RuntimeVersion, version.RuntimeApiVersion)
	status, err := client.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	for _, condition := range status.GetStatus().GetConditions() {
		fmt.Printf("%s=%t %s\n", condition.Type, condition.Status, condition.Message)
	}
	return nil
}

// sweep keeps going past failures so that one stuck pod does not keep the
// others' networks alive; it reports them all at the end.
func sweep(ctx context.Context, client runtimeapi.RuntimeServiceClient) error {
	sandboxes, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, sandbox := range sandboxes.Items {
		name := sandbox.GetMetadata().GetNamespace() + "/" + sandbox.GetMetadata().GetName()
		if _, err := client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod sandbox %s (%s): %w", name, sandbox.Id, err))
			continue
		}
		if _, err := client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod sandbox %s (%s): %w", name, sandbox.Id, err))
			continue
		}
		fmt.Printf("removed pod sandbox %s %s\n", name, sandbox.Id)
	}

	// Removing a sandbox removes its containers; these are the ones whose
	// sandbox was already gone.
	containers, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list containers: %w", err))...)
	}
	for _, container := range containers.Containers {
		if _, err := client.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: container.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s (%s): %w", container.GetMetadata().GetName(), container.Id, err))
			continue
		}
		fmt.Printf("removed container %s %s\n", container.GetMetadata().GetName(), container.Id)
	}
	return errors.Join(errs...)
}
