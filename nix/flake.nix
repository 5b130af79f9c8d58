# The release lane: Linux hosts whose KVM can run guests. `nix develop`
# gives the tools; `nix run .#lab` (as root, from the repository) starts
# containerd with the urunc shim and runs the lab on nerdctl with
# isolation `microvm` (LAB_REQUIRE=nerdctl).
#
# urunc is not packaged in nixpkgs: its source is an input, locked in
# flake.lock on first use, and built with Go when the lab starts.
{
  description = "brig: the lab on nerdctl, containerd and the urunc microVM shim";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";
    urunc = {
      url = "github:urunc-dev/urunc/v0.6.0";
      flake = false;
    };
  };

  outputs = { self, nixpkgs, urunc }:
    let
      system = "x86_64-linux";
      pkgs = nixpkgs.legacyPackages.${system};

      # What the lab drives and what its scenarios need on the host.
      labTools = with pkgs; [
        cargo
        rustc
        clippy
        rustfmt
        go
        containerd
        nerdctl
        cni-plugins
        runc
        qemu_kvm
        cosign
        distribution
        nftables
        iptables
        util-linux
        socat
        jq
        curl
        git
        keyutils
        dbus
        gnome-keyring
        busybox
      ];

      lab = pkgs.writeShellApplication {
        name = "brig-lab";
        runtimeInputs = labTools;
        text = ''
          if [ "$(id -u)" != 0 ]; then
            echo "brig-lab: run as root (containerd and the lab's nftables rules need it)" >&2
            exit 1
          fi
          if [ ! -w /dev/kvm ]; then
            echo "brig-lab: /dev/kvm is missing or not writable: the microVM lane needs KVM" >&2
            exit 1
          fi
          bin=$(mktemp -d)
          trap 'rm -rf "$bin"' EXIT
          (cd ${urunc} && go build -o "$bin/urunc" ./cmd/urunc \
            && go build -o "$bin/containerd-shim-urunc-v2" ./cmd/containerd-shim-urunc-v2)
          export PATH="$bin:$PATH"
          export CNI_PATH=${pkgs.cni-plugins}/bin
          export BRIG_CONTAINERD_RUNTIME=io.containerd.urunc.v2
          export LAB_REQUIRE=nerdctl
          cargo xtask provision
          cargo xtask images
          exec cargo xtask lab -- nerdctl::
        '';
      };
    in
    {
      devShells.${system}.default = pkgs.mkShell {
        packages = labTools;
      };

      apps.${system}.lab = {
        type = "app";
        program = "${lab}/bin/brig-lab";
      };
    };
}
