package serve

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/triage-agent/triage/wire"
)

// The API as the gRPC service triage.wire.v1.Decider (wire/proto/triage.proto),
// served on the endpoint's TCP port: gRPC requests (HTTP/2 with Content-Type
// application/grpc) go to grpc.Server.ServeHTTP, beside the JSON handlers,
// so one TLS port and one ALPN (h2) carry both. Each method goes through
// the endpoint's call path. The descriptor is written by hand (three unary
// methods), so no protoc-gen-go-grpc is needed to regenerate anything.

// Full method names clients invoke.
const (
	GRPCDecideMethod   = "/triage.wire.v1.Decider/Decide"
	GRPCOutcomesMethod = "/triage.wire.v1.Decider/ReportOutcomes"
	GRPCStateMethod    = "/triage.wire.v1.Decider/GetState"
)

// grpcDecider serves the Decider service through its Server.
type grpcDecider struct{ s *Server }

func unary[Req any](call func(*grpcDecider, context.Context, *Req) (any, error), method string) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: method[strings.LastIndexByte(method, '/')+1:],
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(Req)
			if err := dec(in); err != nil {
				return nil, err
			}
			g := srv.(*grpcDecider)
			if icpt == nil {
				return call(g, ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
			return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) { return call(g, ctx, req.(*Req)) })
		},
	}
}

// grpcDeciderDesc describes the service for grpc.Server.RegisterService.
var grpcDeciderDesc = grpc.ServiceDesc{
	ServiceName: "triage.wire.v1.Decider",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		unary(func(g *grpcDecider, ctx context.Context, in *wire.DecideRequest) (any, error) {
			return g.decide(ctx, in)
		}, GRPCDecideMethod),
		unary(func(g *grpcDecider, ctx context.Context, in *wire.OutcomeReport) (any, error) {
			return g.outcomes(ctx, in)
		}, GRPCOutcomesMethod),
		unary(func(g *grpcDecider, ctx context.Context, in *wire.StateRequest) (any, error) { return g.state(ctx, in) }, GRPCStateMethod),
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "triage.proto",
}

func (g *grpcDecider) decide(ctx context.Context, req *wire.DecideRequest) (*wire.DecideResponse, error) {
	resp, err := g.s.decideCall(ctx, ProtocolGRPC, req.GetTasks())
	if err != nil {
		return nil, grpcStatus(err)
	}
	resp.ReqId = req.GetReqId()
	return resp, nil
}

func (g *grpcDecider) outcomes(ctx context.Context, rep *wire.OutcomeReport) (*wire.OutcomeAccepted, error) {
	n, err := g.s.outcomesCall(ctx, ProtocolGRPC, rep.GetOutcomes())
	if err != nil {
		return nil, grpcStatus(err)
	}
	return &wire.OutcomeAccepted{ReqId: rep.GetReqId(), Accepted: uint32(n)}, nil
}

func (g *grpcDecider) state(_ context.Context, _ *wire.StateRequest) (*wire.NodeState, error) {
	st, err := g.s.stateCall(ProtocolGRPC)
	if err != nil {
		return nil, grpcStatus(err)
	}
	return st, nil
}

// grpcStatus maps a refusal's code to its gRPC status.
func grpcStatus(err *callError) error {
	c := codes.Internal
	switch err.code {
	case wire.CodeBatchTooLarge:
		c = codes.ResourceExhausted
	case wire.CodeInvalidArgument, wire.CodeMalformed:
		c = codes.InvalidArgument
	case wire.CodeUnauthenticated:
		c = codes.Unauthenticated
	case wire.CodeUnavailable:
		c = codes.Unavailable
	}
	return status.Error(c, err.msg)
}

// grpcAuth is the bearer-token check of every gRPC call: the
// "authorization" metadata, as gRPC clients send call credentials.
func (s *Server) grpcAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.cfg.Auth.Configured() {
		md, _ := metadata.FromIncomingContext(ctx)
		var h string
		if v := md.Get("authorization"); len(v) > 0 {
			h = v[0]
		}
		if !s.authorizedHeader(h) {
			s.countCall(ProtocolGRPC, grpcMethod(info.FullMethod), wire.CodeUnauthenticated)
			return nil, status.Error(codes.Unauthenticated, "missing or invalid bearer token (metadata authorization: Bearer <token>)")
		}
	}
	return handler(ctx, req)
}

func grpcMethod(full string) string {
	switch full {
	case GRPCDecideMethod:
		return methodDecide
	case GRPCOutcomesMethod:
		return methodOutcomes
	case GRPCStateMethod:
		return methodState
	}
	return methodOther
}

func (s *Server) grpcOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxFrameBytes),
		grpc.MaxConcurrentStreams(uint32(s.cfg.MaxStreamsPerConn)),
		grpc.UnaryInterceptor(s.grpcAuth),
	}
}

// newGRPC is the gRPC server the TCP listener hands gRPC requests to
// (ServeHTTP: TLS is the listener's).
func (s *Server) newGRPC() *grpc.Server {
	g := grpc.NewServer(s.grpcOptions()...)
	g.RegisterService(&grpcDeciderDesc, &grpcDecider{s: s})
	return g
}

// StandaloneGRPC returns a gRPC server with gRPC's own HTTP/2 transport and
// TLS 1.3 with the endpoint's identity, serving the same service through the
// same call path; the caller runs Serve on a TCP listener. The agent does
// not use it (its TCP port shares HTTP/2 between gRPC and JSON);
// `triage bench decide` runs it beside the agent's port, to show what
// sharing the port costs.
func (s *Server) StandaloneGRPC() *grpc.Server {
	creds := credentials.NewTLS(s.certs.serverConfig([]string{"h2"}, s.clientAuth()))
	g := grpc.NewServer(append(s.grpcOptions(), grpc.Creds(creds))...)
	g.RegisterService(&grpcDeciderDesc, &grpcDecider{s: s})
	return g
}
