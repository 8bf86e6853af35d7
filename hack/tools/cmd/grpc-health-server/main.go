// grpc-health-server serves the gRPC health protocol (grpc.health.v1) for
// the e2e tests of gRPC probes, from inside the busybox test image. It
// answers SERVING for every service, or NOT_SERVING while the file named
// by -not-serving-file exists, so that a test can make it fail at will.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type server struct {
	healthpb.UnimplementedHealthServer
	notServingFile string
}

func (s *server) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if s.notServingFile != "" {
		if _, err := os.Stat(s.notServingFile); err == nil {
			return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func main() {
	port := flag.Int("port", 5000, "port to listen on, on every address")
	notServing := flag.String("not-serving-file", "", "answer NOT_SERVING while this file exists")
	flag.Parse()

	lis, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &server{notServingFile: *notServing})
	log.Printf("serving grpc.health.v1 on %s", lis.Addr())
	log.Fatal(srv.Serve(lis))
}
