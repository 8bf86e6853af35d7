# nodelet's image.
#
# Base: debian:bookworm-slim, not kubebuilder's distroless/static:nonroot.
# nodelet is a node agent: it runs as root and privileged, talks to the CRI
# socket, enters network namespaces through the host's /proc, and makes
# mounts under its root folder. Most of that is system calls from a static
# binary, but in agent network mode nodelet executes the CNI plugins (bridge,
# portmap, ...) mounted from the host, and those execute iptables and expect
# a normal Linux userland around them. So the image carries iptables and
# iproute2, and a shell for debugging a node. It also carries the runtime
# the chart's runtime pod runs: containerd 2 and runc built from their Go
# modules (the runtime stage), and Debian's CNI plugins in /usr/lib/cni. A local volume on a block
# device is probed with blkid, formatted with mkfs.<fsType> and mounted
# with mount(8): util-linux and e2fsprogs, named so that the image keeps
# them (bookworm-slim has both), and xfsprogs for fsType xfs. Debian's
# iptables defaults to the nft backend; a host still on iptables-legacy
# needs the legacy alternative selected.
#
# Build: docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git describe --always --dirty --exclude '*') -t nodelet:v0.1.0 .
# Without a Docker engine: hack/build-image.sh.

# The binary is cross-compiled on the build machine's platform.
FROM --platform=$BUILDPLATFORM docker.io/library/golang:1.26-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH
# The image's tag; the binary's version is baseVersion in version.go with
# COMMIT (main.commit) after a "+".
ARG VERSION=dev
ARG COMMIT=
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.commit=${COMMIT}" -o /out/nodelet . \
 && CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/nodelet-cni ./cmd/nodelet-cni \
 && CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/nodelet-approver ./cmd/nodelet-approver

# The companion's runtime: containerd 2 with its runc shim, and runc, built
# from their Go modules at the versions the tests run (CONTAINERD2_VERSION
# and RUNC_VERSION in hack/lib.sh, which hack/build-image.sh passes and
# checks these defaults against), with hack/build-runtime.sh's tags:
# Debian 12's containerd 1.6 and runc 1.1 are past their upstream support.
# Built for the target platform itself (no --platform): runc links
# libseccomp through cgo.
FROM docker.io/library/golang:1.26-bookworm AS runtime
ARG CONTAINERD_VERSION=v2.4.2
ARG RUNC_VERSION=v1.5.2
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends libseccomp-dev \
 && rm -rf /var/lib/apt/lists/*
RUN cd / && GOBIN=/out CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" -tags "no_btrfs no_devmapper no_zfs no_tracing" \
    github.com/containerd/containerd/v2/cmd/containerd@${CONTAINERD_VERSION} \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@${CONTAINERD_VERSION} \
 && cd / && GOBIN=/out CGO_ENABLED=1 go install -trimpath -ldflags "-s -w" -tags "seccomp urfave_cli_no_docs" \
    github.com/opencontainers/runc@${RUNC_VERSION}

FROM docker.io/library/debian:bookworm-slim
ARG VERSION=dev
LABEL org.opencontainers.image.title="nodelet" \
      org.opencontainers.image.description="A Kubernetes node agent built as a controller-runtime operator" \
      org.opencontainers.image.source="https://github.com/nodelet/nodelet" \
      org.opencontainers.image.version="${VERSION}"
RUN export DEBIAN_FRONTEND=noninteractive \
 && apt-get update \
 && apt-get install -y --no-install-recommends iptables iproute2 util-linux e2fsprogs xfsprogs libseccomp2 containernetworking-plugins \
 && rm -rf /var/lib/apt/lists/*
# containerd, its runc shim and runc (the runtime stage's), where the
# chart's runtime container finds them on its PATH.
COPY --from=runtime /out/containerd /out/containerd-shim-runc-v2 /out/runc /usr/local/bin/
COPY --from=build /out/nodelet /usr/local/bin/nodelet
# The agent network mode's CNI shim: nodelet copies it into the runtime's
# CNI bin folder at start.
COPY --from=build /out/nodelet-cni /usr/local/bin/nodelet-cni
# The approver of the DaemonSet pods' node certificates, which the chart
# runs as a Deployment (command /usr/local/bin/nodelet-approver).
COPY --from=build /out/nodelet-approver /usr/local/bin/nodelet-approver
# Root: the CRI socket, mounts, cgroups and network namespaces need it.
USER 0:0
ENTRYPOINT ["/usr/local/bin/nodelet"]
