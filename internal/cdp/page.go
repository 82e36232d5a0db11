package cdp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// Page is one tab attached in flat session mode.
type Page struct {
	b         *Browser
	sessionID string
	targetID  string
}

// NewPage opens url in a new tab and waits until its document has loaded.
func (b *Browser) NewPage(ctx context.Context, url string) (*Page, error) {
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := b.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, sessionID: attached.SessionID, targetID: created.TargetID}
	if err := p.Call(ctx, "Page.enable", nil, nil); err != nil {
		return nil, err
	}
	if err := p.Navigate(ctx, url); err != nil {
		return nil, err
	}
	return p, nil
}

// Call sends a command to this page.
func (p *Page) Call(ctx context.Context, method string, params, result any) error {
	return p.b.Call(ctx, p.sessionID, method, params, result)
}

// Navigate loads url and waits for document.readyState == "complete".
func (p *Page) Navigate(ctx context.Context, url string) error {
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.Call(ctx, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", url, nav.ErrorText)
	}
	return p.WaitFor(ctx, `document.readyState === "complete"`)
}

// WaitFor polls a JavaScript boolean expression until it is true.
func (p *Page) WaitFor(ctx context.Context, expr string) error {
	for {
		var ok bool
		if err := p.Evaluate(ctx, expr, &ok); err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", expr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Evaluate runs a JavaScript expression and decodes its (JSON) value.
func (p *Page) Evaluate(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.Call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("javascript: %s %s", res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

// Click dispatches a real left-button press and release at (x, y) in CSS
// pixels of the viewport.
func (p *Page) Click(ctx context.Context, x, y float64) error {
	if err := p.Call(ctx, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": x, "y": y}, nil); err != nil {
		return err
	}
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		if err := p.Call(ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil); err != nil {
			return err
		}
	}
	return nil
}

// ClickSelector clicks the centre of the first element matching a CSS selector.
func (p *Page) ClickSelector(ctx context.Context, selector string) error {
	x, y, err := p.Center(ctx, selector)
	if err != nil {
		return err
	}
	return p.Click(ctx, x, y)
}

// Center returns the viewport centre of the first element matching selector.
func (p *Page) Center(ctx context.Context, selector string) (x, y float64, err error) {
	sel, _ := json.Marshal(selector)
	var pt struct{ X, Y float64 }
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return null;
		const r = e.getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, sel)
	var raw json.RawMessage
	if err := p.Evaluate(ctx, expr, &raw); err != nil {
		return 0, 0, err
	}
	if string(raw) == "null" || len(raw) == 0 {
		return 0, 0, fmt.Errorf("no element matches %s", selector)
	}
	if err := json.Unmarshal(raw, &pt); err != nil {
		return 0, 0, err
	}
	return pt.X, pt.Y, nil
}

// InsertText types text into the focused element as an IME commit would,
// which fires the element's input event.
func (p *Page) InsertText(ctx context.Context, text string) error {
	return p.Call(ctx, "Input.insertText", map[string]any{"text": text}, nil)
}

// PressKey sends a key down and up (e.g. "Escape", "Enter").
func (p *Page) PressKey(ctx context.Context, key string) error {
	for _, typ := range []string{"keyDown", "keyUp"} {
		if err := p.Call(ctx, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": key, "code": key}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Screenshot captures the viewport as PNG.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	var res struct {
		Data string `json:"data"`
	}
	if err := p.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &res); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(res.Data)
}

// Close closes the tab.
func (p *Page) Close(ctx context.Context) error {
	return p.b.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": p.targetID}, nil)
}
