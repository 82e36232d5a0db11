package flamegraph

import (
	"github.com/google/pprof/profile"
)

// syntheticProfile is a fixed profile for golden files: two processes, Go
// and C user frames, kernel frames, an unnamed frame. scale multiplies the
// hot leaf so a second profile can differ from the first.
func syntheticProfile(hotScale int64) *profile.Profile {
	kernel := &profile.Mapping{ID: 1, File: "[kernel.kallsyms]", HasFunctions: true}
	app := &profile.Mapping{ID: 2, Start: 0x400000, Limit: 0x500000, File: "/usr/bin/app", HasFunctions: true}
	libc := &profile.Mapping{ID: 3, Start: 0x7f0000000000, Limit: 0x7f0000100000, File: "/lib/x86_64-linux-gnu/libc.so.6", HasFunctions: true}
	p := &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: TypeSamples, Unit: "count"}, {Type: TypeCPU, Unit: "nanoseconds"}},
		PeriodType:        &profile.ValueType{Type: TypeCPU, Unit: "nanoseconds"},
		Period:            52631578,
		DefaultSampleType: TypeCPU,
		Mapping:           []*profile.Mapping{kernel, app, libc},
	}
	fn := map[string]*profile.Function{}
	loc := map[string]*profile.Location{}
	mk := func(name string, m *profile.Mapping) *profile.Location {
		if l := loc[name]; l != nil {
			return l
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: m.File}
		fn[name] = f
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: m.Start + uint64(len(p.Location))*16,
			Line: []profile.Line{{Function: f}}}
		loc[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	add := func(comm string, n int64, frames ...*profile.Location) { // leaf first
		p.Sample = append(p.Sample, &profile.Sample{
			Value:    []int64{n, n * p.Period},
			Location: frames,
			Label:    map[string][]string{"comm": {comm}},
			NumLabel: map[string][]int64{"pid": {42}},
		})
	}
	mainMain := mk("main.main", app)
	runtimeMain := mk("runtime.main", app)
	handler := mk("github.com/acme/app/server.(*Handler).ServeHTTP", app)
	hot := mk("github.com/acme/app/encode.hotLoop", app)
	memcpy := mk("memcpy", libc)
	read := mk("syscall.read", app)
	sysRead := mk("ksys_read", kernel)
	entry := mk("entry_SYSCALL_64_after_hwframe", kernel)
	readZero := mk("read_zero", kernel)
	add("app", 40*hotScale, hot, handler, mainMain, runtimeMain)
	add("app", 10, memcpy, handler, mainMain, runtimeMain)
	add("app", 15, readZero, sysRead, entry, read, handler, mainMain, runtimeMain)
	add("app", 5, mainMain, runtimeMain)
	gc := mk("runtime.gcBgMarkWorker", app)
	scan := mk("runtime.scanobject", app)
	add("app", 8, scan, gc)
	worker := mk("worker_loop", libc)
	add("worker", 20, worker)
	return p
}
