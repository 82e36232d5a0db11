package serve

import (
	"context"
	"crypto/tls"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/triage-agent/triage/wire"
)

// The decide call as a gRPC service (triage.wire.v1.Decider/Decide in
// wire/proto/triage.proto), over TCP with the same TLS 1.3 certificate. The
// agent does not serve it; `triage bench decide` runs it beside the QUIC
// endpoint to compare the two on the same backend. The descriptor is
// written by hand (it is one unary method), so no protoc-gen-go-grpc is
// needed to regenerate anything.

// GRPCDeciderServer is the server side of triage.wire.v1.Decider.
type GRPCDeciderServer interface {
	Decide(context.Context, *wire.DecideRequest) (*wire.DecideResponse, error)
}

// GRPCDeciderDesc describes the service for grpc.Server.RegisterService.
var GRPCDeciderDesc = grpc.ServiceDesc{
	ServiceName: "triage.wire.v1.Decider",
	HandlerType: (*GRPCDeciderServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Decide",
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wire.DecideRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			if icpt == nil {
				return srv.(GRPCDeciderServer).Decide(ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: GRPCDecideMethod}
			return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return srv.(GRPCDeciderServer).Decide(ctx, req.(*wire.DecideRequest))
			})
		},
	}},
	Streams:  []grpc.StreamDesc{},
	Metadata: "triage.proto",
}

// GRPCDecideMethod is the full method name clients invoke.
const GRPCDecideMethod = "/triage.wire.v1.Decider/Decide"

type grpcDecider struct {
	backend  Backend
	maxBatch int
}

func (g *grpcDecider) Decide(ctx context.Context, req *wire.DecideRequest) (*wire.DecideResponse, error) {
	if len(req.GetTasks()) > g.maxBatch {
		return nil, status.Errorf(codes.InvalidArgument, "%d tasks, limit %d", len(req.GetTasks()), g.maxBatch)
	}
	ds, model, epoch, err := g.backend.Decide(ctx, req.GetTasks())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "deciding: %v", err)
	}
	return &wire.DecideResponse{ReqId: req.GetReqId(), Decisions: ds, Model: model, StateEpoch: epoch}, nil
}

// NewGRPCServer returns a gRPC server with TLS 1.3 and the Decider service
// over backend; the caller runs Serve on a TCP listener.
func NewGRPCServer(backend Backend, cert tls.Certificate, maxBatch int) (*grpc.Server, error) {
	if backend == nil {
		return nil, fmt.Errorf("%w: nil backend", ErrBadConfig)
	}
	if maxBatch <= 0 {
		maxBatch = 1024
	}
	creds := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}})
	s := grpc.NewServer(grpc.Creds(creds), grpc.MaxRecvMsgSize(1<<20))
	s.RegisterService(&GRPCDeciderDesc, &grpcDecider{backend: backend, maxBatch: maxBatch})
	return s, nil
}
