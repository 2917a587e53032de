import Foundation

/// The sipp scenarios of ``NetworkLab/call(_:through:from:port:mediaPort:within:)`` and
/// ``NetworkLab/message(_:text:through:from:port:within:)`` (run with `-s ACCOUNT`, the remote
/// host the registrar), written into the lab's folder when used.
extension NetworkLab {
    /// INVITE (PCMU offer), an optional 100, 180 and 200 within `waiting`, ACK, BYE 0.5 s later.
    /// ACK and BYE follow the record-routed path.
    static func callScenario(waiting: Duration) -> String {
        let milliseconds = max(1000, Int(waiting.components.seconds) * 1000)
        return """
            <?xml version="1.0" encoding="ISO-8859-1" ?>
            <scenario name="netlab-call">
              <send>
                <![CDATA[

                  INVITE sip:[service]@[remote_ip] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]lab1
                  To: <sip:[service]@[remote_ip]>
                  Call-ID: [call_id]
                  CSeq: 1 INVITE
                  Max-Forwards: 70
                  Contact: <sip:caller@[local_ip]:[local_port]>
                  Content-Type: application/sdp
                  Content-Length: [len]

                  v=0
                  o=caller 2000 1 IN IP[local_ip_type] [local_ip]
                  s=-
                  c=IN IP[media_ip_type] [media_ip]
                  t=0 0
                  m=audio [media_port] RTP/AVP 0
                  a=rtpmap:0 PCMU/8000

                ]]>
              </send>
              <recv response="100" optional="true"/>
              <recv response="180" optional="true"/>
              <recv response="200" timeout="\(milliseconds)" rrs="true"/>
              <send>
                <![CDATA[

                  ACK [next_url] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]lab1
                  To: <sip:[service]@[remote_ip]>[peer_tag_param]
                  Call-ID: [call_id]
                  CSeq: 1 ACK
                  [routes]
                  Max-Forwards: 70
                  Content-Length: 0

                ]]>
              </send>
              <pause milliseconds="500"/>
              <send>
                <![CDATA[

                  BYE [next_url] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]lab1
                  To: <sip:[service]@[remote_ip]>[peer_tag_param]
                  Call-ID: [call_id]
                  CSeq: 2 BYE
                  [routes]
                  Max-Forwards: 70
                  Content-Length: 0

                ]]>
              </send>
              <recv response="200"/>
            </scenario>

            """
    }

    /// A MESSAGE (RFC 3428) with `body` (printable ASCII; its brackets, sipp's keyword marks,
    /// become parentheses); 200 or 202 ends it.
    static func messageScenario(body: String) -> String {
        let safe = body.replacingOccurrences(of: "[", with: "(").replacingOccurrences(of: "]", with: ")")
        return """
            <?xml version="1.0" encoding="ISO-8859-1" ?>
            <scenario name="netlab-message">
              <send>
                <![CDATA[

                  MESSAGE sip:[service]@[remote_ip] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: <sip:lab@[local_ip]:[local_port]>;tag=[pid]labmsg
                  To: <sip:[service]@[remote_ip]>
                  Call-ID: [call_id]
                  CSeq: 1 MESSAGE
                  Max-Forwards: 70
                  Content-Type: text/plain
                  Content-Length: [len]

                  \(safe)
                ]]>
              </send>
              <recv response="200" optional="true" next="1"/>
              <recv response="202"/>
              <label id="1"/>
            </scenario>

            """
    }
}
