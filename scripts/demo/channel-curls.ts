/**
 * Shell lines that send one customer message to the demo's direct channels as the platforms
 * post them: a fresh message id each time (`date +%s` and `$RANDOM`), so every line run is a
 * new message. WhatsApp's body is signed with the app secret (X-Hub-Signature-256 over the raw
 * bytes); Telegram's carries the secret token in its header.
 */
export const SAMPLE_WHATSAPP_FROM = '15550001111';
export const SAMPLE_TELEGRAM_CHAT = 424242;

export function whatsappCurl(webhookUrl: string, appSecret: string, phoneNumberId: string, question: string): string {
  const payload =
    `{"object":"whatsapp_business_account","entry":[{"id":"demo-waba","changes":[{"field":"messages","value":{"messaging_product":"whatsapp",` +
    `"metadata":{"display_phone_number":"15550000000","phone_number_id":"${phoneNumberId}"},` +
    `"contacts":[{"profile":{"name":"Dana Demo"},"wa_id":"${SAMPLE_WHATSAPP_FROM}"}],` +
    `"messages":[{"from":"${SAMPLE_WHATSAPP_FROM}","id":"wamid.demo'$(date +%s)$RANDOM'","timestamp":"'$(date +%s)'","type":"text","text":{"body":"${question}"}}]}}]}]}`;
  return (
    `body='${payload}'; ` +
    `curl -s ${webhookUrl} -H 'content-type: application/json' ` +
    `-H "x-hub-signature-256: sha256=$(printf %s "$body" | openssl dgst -sha256 -hmac '${appSecret}' | sed 's/^.* //')" -d "$body"`
  );
}

export function telegramCurl(webhookUrl: string, secretToken: string, question: string): string {
  const payload =
    `{"update_id":'$(date +%s)$RANDOM',"message":{"message_id":'$RANDOM',"date":'$(date +%s)',` +
    `"chat":{"id":${SAMPLE_TELEGRAM_CHAT},"type":"private","first_name":"Tom"},"from":{"id":${SAMPLE_TELEGRAM_CHAT},"is_bot":false,"first_name":"Tom"},"text":"${question}"}}`;
  return `body='${payload}'; curl -s ${webhookUrl} -H 'content-type: application/json' -H 'x-telegram-bot-api-secret-token: ${secretToken}' -d "$body"`;
}
