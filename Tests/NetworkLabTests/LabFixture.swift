import NetworkLab
import Testing

/// A phone host with a `wifi` link (metric 100) and a `cell` link (metric 200) to a server host.
struct LabFixture {
    let lab: NetworkLab
    let phone: LabHost
    let server: LabHost
    let wifi: LabLink
    let cell: LabLink

    init(_ lab: NetworkLab) async throws {
        self.lab = lab
        phone = try await lab.addHost("phone")
        server = try await lab.addHost("server")
        wifi = try await lab.connect(phone, to: server, as: "wifi")
        cell = try await lab.connect(phone, to: server, as: "cell", metric: 200)
    }

    /// `ip ARGUMENTS` in the phone host.
    func phoneIP(_ arguments: String) async throws -> String {
        try await lab.run(in: phone, ["ip"] + arguments.split(separator: " ").map(String.init))
    }

    /// The interface the phone's route to `address` leaves by now.
    func route(to address: String) async throws -> String {
        let words = try await phoneIP("route get \(address)").split(separator: " ")
        guard let dev = words.firstIndex(of: "dev"), dev + 1 < words.count else { return "" }
        return String(words[dev + 1])
    }

    /// Sends `count` UDP datagrams of `payload` bytes from the phone to the server's end of `link`
    /// (bash's /dev/udp), then returns how many the server's input hook counted
    /// (``NetworkLab/countDatagrams(in:toPort:from:)``), waiting up to `settle` for late ones (a
    /// delay holds them).
    func datagramsArriving(
        over link: LabLink, count: Int, payload: Int = 1, settle: Duration = .zero
    ) async throws -> Int {
        let gateway = await lab.addresses(of: link).gateway4
        let counter = try await lab.countDatagrams(in: server, toPort: 9)
        let send =
            "s=$(printf '%0\(max(0, payload - 1))d' 0);"
            + " for i in $(seq \(count)); do echo $s > /dev/udp/\(gateway)/9; done; true"
        try await lab.run(in: phone, ["bash", "-c", send], timeout: .seconds(30))
        var arrived = try await counter.packets()
        _ = await eventually(within: settle) {
            arrived = (try? await counter.packets()) ?? arrived
            return arrived >= count
        }
        try await counter.remove()
        return arrived
    }
}

/// The lab suites need root, iproute2 and (for loss and partitions) nftables; CI runs as root.
extension Trait where Self == ConditionTrait {
    static var needsLab: Self { .enabled(if: NetworkLab.isSupported, "needs root and iproute2") }
}
