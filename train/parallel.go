package train

import (
	"runtime"
	"sync"
)

// eachScenario runs f on every scenario, as many at once as GOMAXPROCS
// (each is a CPU-bound simulation), and returns the first error one of
// them returned. f must guard what it shares with the others.
func eachScenario(scenarios []*Scenario, f func(i int, sc *Scenario) error) error {
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i, sc); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}
