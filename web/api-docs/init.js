// Swagger UI over this service's own document. An external file, not an inline script, so
// the page's Content-Security-Policy can stay `script-src 'self'`. No validator badge:
// nothing is fetched from anywhere but this service.
window.ui = window.SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  defaultModelsExpandDepth: 0,
});
