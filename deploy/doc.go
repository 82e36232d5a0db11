// Package deploy holds what an operator deploys: the Dockerfile, the
// DaemonSet manifest and the Helm chart. It has no Go code of its own; its
// test decodes the manifests with the Kubernetes API types and checks the
// least-privilege contract documented in docs/deploy.md.
package deploy
