// grpchealth serves grpc.health.v1 for the e2e pods: the overall service and "demo.Orders"
// flip between SERVING and NOT_SERVING on a schedule, and every Check it receives is logged
// with its time and peer so the kubelet's attempts can be told from the shadow's.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
)

type logged struct {
	healthpb.UnimplementedHealthServer
	inner *health.Server
	out   *os.File
}

func (l *logged) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	from := "?"
	if p, ok := peer.FromContext(ctx); ok {
		from = p.Addr.String()
	}
	resp, err := l.inner.Check(ctx, req)
	status := "error"
	if err == nil {
		status = resp.Status.String()
	}
	fmt.Fprintf(l.out, "PROBE %.6f grpc %s %s %s\n", float64(time.Now().UnixMicro())/1e6, from, req.Service, status)
	return resp, err
}

func (l *logged) Watch(req *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	return l.inner.Watch(req, s)
}

func main() {
	port := flag.Int("port", 9090, "port to listen on")
	flip := flag.Duration("flip", 0, "toggle demo.Orders every this long (0: always SERVING)")
	flag.Parse()
	lis, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	inner := health.NewServer()
	inner.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	inner.SetServingStatus("demo.Orders", healthpb.HealthCheckResponse_SERVING)
	if *flip > 0 {
		go func() {
			serving := true
			for range time.Tick(*flip) {
				serving = !serving
				st := healthpb.HealthCheckResponse_NOT_SERVING
				if serving {
					st = healthpb.HealthCheckResponse_SERVING
				}
				inner.SetServingStatus("demo.Orders", st)
			}
		}()
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &logged{inner: inner, out: os.Stdout})
	log.Fatal(srv.Serve(lis))
}
