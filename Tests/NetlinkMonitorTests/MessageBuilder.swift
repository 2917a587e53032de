@testable import NetlinkMonitor

/// Builds rtnetlink messages byte by byte (host order, 4-byte aligned), as the kernel sends them.
struct MessageBuilder {
    private(set) var bytes: [UInt8] = []

    mutating func message(type: UInt16, flags: UInt16 = 0, header: [UInt8], attributes: [(UInt16, [UInt8])]) {
        var body = header
        for (type, value) in attributes {
            body += le(UInt16(4 + value.count)) + le(type) + value
            body += [UInt8](repeating: 0, count: RouteMessageDecoder.align(value.count) - value.count)
        }
        bytes += le(UInt32(16 + body.count)) + le(type) + le(flags) + le(UInt32(0)) + le(UInt32(0)) + body
    }

    func decoded() -> [RouteMessage] {
        bytes.withUnsafeBytes { RouteMessageDecoder.decode($0).map(\.message) }
    }

    static func link(
        type: UInt16 = 16, index: Int32, flags: UInt32, name: String, operState: UInt8, carrierChanges: UInt32? = nil
    ) -> MessageBuilder {
        var builder = MessageBuilder()
        var attributes: [(UInt16, [UInt8])] = [(3, Array(name.utf8) + [0]), (16, [operState])]
        if let carrierChanges { attributes.append((35, le(carrierChanges))) }
        let header: [UInt8] = [0, 0] + le(UInt16(1)) + le(index) + le(flags) + le(UInt32(0))
        builder.message(type: type, header: header, attributes: attributes)
        return builder
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { Self.le(value) }
}
